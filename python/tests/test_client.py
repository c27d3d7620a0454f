"""The client against a real `pilotfish serve`: submit, follow, list, get, wait, cancel."""

import collections
import unittest

from support import client, unique

from pilotfish import FINAL, PilotfishError, TaskCanceled, TaskFailed

class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = client()

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def test_submits_and_follows_500_tasks_to_their_end(self):
        label = unique("sweep")
        made = self.c.submit(
            [
                {"executable": "/bin/sh", "arguments": ["-c", f"exit {1 if i % 50 == 7 else 0}"],
                 "labels": {"sweep": label}, "name": f"n{i}"}
                for i in range(500)
            ]
        )
        self.assertEqual(len(made), 500)
        uids = [m["uid"] for m in made]
        ended = self.c.wait(uids, timeout=240)
        self.assertEqual(list(ended), uids)
        states = collections.Counter(t["state"] for t in ended.values())
        self.assertEqual(states, {"DONE": 490, "FAILED": 10})
        failed = [t for t in ended.values() if t["state"] == "FAILED"]
        self.assertTrue(all(t["exitCode"] == 1 and t["reason"]["code"] for t in failed))
        # every task's notifications on the event stream (as the store has them: out of order,
        # by design), each once, up to its final state
        seen = collections.defaultdict(list)
        mine = set(uids)
        ended_ = set()
        for ev in self.c.events():
            d = ev.data
            if ev.kind == "task" and d["uid"] in mine:
                seen[d["uid"]].append(d["state"])
                if d["state"] in FINAL:
                    ended_.add(d["uid"])
                    if len(ended_) == 500:
                        break
        for uid, states_ in seen.items():
            self.assertEqual(len(states_), len(set(states_)), uid)
            self.assertIn(ended[uid]["state"], states_)
        # listed by label, a page at a time, in submission order
        listed = list(self.c.tasks(labels={"sweep": label}, page=64))
        self.assertEqual([t["uid"] for t in listed], uids)
        only_failed = list(self.c.tasks(state="FAILED", labels={"sweep": label}))
        self.assertEqual(len(only_failed), 10)
        one = self.c.task(uids[0])
        self.assertEqual(one["description"]["name"], "n0")
        self.assertEqual(one["history"][-1]["state"], "DONE")

    def test_submits_a_pilot_that_takes_tasks_and_cancels_it(self):
        [p] = self.c.submit_pilots([{"resource": "local", "cores": 1, "runtimeMin": 10}])
        self.assertIn(p["uid"], [q["uid"] for q in self.c.pilots()])
        [t] = self.c.submit([{"executable": "/bin/true", "pilot": p["uid"]}])
        self.assertEqual(self.c.wait([t["uid"]], timeout=120)[t["uid"]]["pilot"], p["uid"])
        self.c.cancel_pilot(p["uid"])
        for ev in self.c.events():
            if ev.kind == "pilot" and ev.data["uid"] == p["uid"] and ev.data["state"] in FINAL:
                break
        self.assertEqual(ev.data["state"], "CANCELED")

    def test_a_bad_description_is_refused_whole_naming_its_path(self):
        with self.assertRaises(PilotfishError) as e:
            self.c.submit([{"executable": "/bin/true"}, {"executable": 3}])
        self.assertEqual(e.exception.code, "E_VALIDATION")
        self.assertEqual(e.exception.status, 400)
        self.assertIn("/tasks/1/executable", [i["path"] for i in e.exception.issues])

    def test_an_unknown_task_is_a_clear_error(self):
        with self.assertRaises(PilotfishError) as e:
            self.c.task("no-such-task")
        self.assertEqual((e.exception.status, e.exception.code), (404, "E_NOT_FOUND"))
        with self.assertRaises(PilotfishError) as e:
            self.c.wait(["no-such-task"], timeout=5)
        self.assertEqual(e.exception.status, 404)

    def test_cancels_a_running_task_and_its_future_says_so(self):
        [t] = self.c.submit([{"executable": "/bin/sleep", "arguments": ["60"]}])
        [f] = self.c.futures([t])
        for ev in self.c.events():
            if ev.data.get("uid") == t["uid"] and ev.data["state"] == "AGENT_EXECUTING":
                break
        self.c.cancel(t["uid"])
        with self.assertRaises(TaskCanceled) as e:
            f.result(timeout=60)
        self.assertEqual(e.exception.state, "CANCELED")
        self.assertEqual(self.c.task(t["uid"])["state"], "CANCELED")

    def test_wait_times_out_with_what_is_left(self):
        [t] = self.c.submit([{"executable": "/bin/sleep", "arguments": ["30"]}])
        with self.assertRaises(TimeoutError) as e:
            self.c.wait([t["uid"]], timeout=0.5)
        self.assertIn("1 of 1", str(e.exception))
        self.c.cancel(t["uid"])

    def test_output_and_a_failed_future(self):
        [ok, bad] = self.c.submit(
            [
                {"executable": "/bin/sh", "arguments": ["-c", "echo one; echo two"]},
                {"executable": "/bin/sh", "arguments": ["-c", "echo oops >&2; exit 3"]},
            ]
        )
        f_ok, f_bad = self.c.futures([ok, bad])
        self.assertIsNone(f_ok.result(timeout=60))
        with self.assertRaises(TaskFailed) as e:
            f_bad.result(timeout=60)
        self.assertEqual(e.exception.state, "FAILED")
        self.assertIn("exit", e.exception.message.lower() + str(e.exception.reason))
        self.assertEqual(self.c.output(ok["uid"]), "one\ntwo\n")
        self.assertEqual(self.c.output(bad["uid"], stream="stderr"), "oops\n")


if __name__ == "__main__":
    unittest.main()
