"""Remote functions: closures shipped by value to the pilot's warm Python workers."""

import os
import sys
import unittest

import cloudpickle

from support import client

from pilotfish import PilotfishError, TaskFailed, VersionMismatch

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
# this module's own classes and functions travel by value (the workers cannot import it)
cloudpickle.register_pickle_by_value(sys.modules[__name__])

COUNTER = 0


class FakeTensor:
    """Stands in for a torch tensor: ``.to(device)`` is all the device hook asks of one."""

    def __init__(self, values, device="cpu"):
        self.values = values
        self.device = device

    def to(self, device):
        return FakeTensor(self.values, device)


class RemoteTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = client()

    @classmethod
    def tearDownClass(cls):
        cls.c.close()

    def test_a_closure_with_a_local_and_a_helper_runs_1000_times_right(self):
        offset = 7  # a local the closure captures

        def helper(x):
            return x * x

        @self.c.remote(cores=1)
        def f(x):
            return {"x": x, "y": helper(x) + offset, "pid": os.getpid()}

        results = f.map(range(1000))
        self.assertEqual([r["y"] for r in results], [x * x + 7 for x in range(1000)])
        self.assertEqual([r["x"] for r in results], list(range(1000)))
        self.assertNotIn(os.getpid(), {r["pid"] for r in results})  # it ran elsewhere
        # one at a time too: the closure's value when each call is made
        for k in range(3):
            offset = 100 * k
            self.assertEqual(f(2)["y"], 4 + 100 * k)

    def test_a_50_mib_result_comes_back(self):
        big = self.c.remote(lambda n: os.urandom(16) + b"\x01" * n)
        data = big(50 * 1024 * 1024)
        self.assertEqual(len(data), 16 + 50 * 1024 * 1024)
        self.assertEqual(data[16:], b"\x01" * (50 * 1024 * 1024))

    def test_a_big_argument_goes_by_file(self):
        blob = os.urandom(3 * 1024 * 1024)
        size = self.c.remote(lambda b: (len(b), b[:8], b[-8:]))
        self.assertEqual(size(blob), (len(blob), blob[:8], blob[-8:]))

    def test_a_changed_global_and_closure_cell_are_synced_back_when_asked(self):
        global COUNTER
        COUNTER = 5
        seen = []

        def bump(n):
            global COUNTER
            COUNTER += n
            seen.append(n)
            return COUNTER

        plain = self.c.remote(bump)
        self.assertEqual(plain(1), 6)
        self.assertEqual(COUNTER, 5)  # not asked: nothing comes back
        synced = self.c.remote(bump, sync=True)
        self.assertEqual(synced(10), 15)
        self.assertEqual(COUNTER, 15)
        self.assertEqual(synced(1), 16)
        self.assertEqual(COUNTER, 16)

        total = 0

        def add(n):
            nonlocal total
            total += n
            return total

        acc = self.c.remote(add, sync=True)
        acc(3)
        acc(4)
        self.assertEqual(total, 7)
        del seen

    def test_objects_with_to_are_moved_to_the_device_and_back(self):
        @self.c.remote(device="cuda:0")
        def where(t, ts):
            return t.device, [u.device for u in ts], t

        dev, devs, back = where(FakeTensor([1, 2]), [FakeTensor([3])])
        self.assertEqual((dev, devs), ("cuda:0", ["cuda:0"]))
        self.assertEqual((back.device, back.values), ("cpu", [1, 2]))

    def test_what_a_call_prints_is_its_tasks_output(self):
        @self.c.remote
        def chatty(x):
            print(f"working on {x}")
            print("warned", file=sys.stderr)
            return x

        futures = [chatty.submit(i) for i in range(3)]
        self.assertEqual([f.result(timeout=60) for f in futures], [0, 1, 2])
        for i, f in enumerate(futures):
            self.assertEqual(self.c.output(f.uid), f"working on {i}\n")
            self.assertEqual(self.c.output(f.uid, stream="stderr"), "warned\n")

    def test_a_raise_fails_the_call_with_its_reason(self):
        @self.c.remote
        def boom(x):
            raise ValueError(f"bad {x}")

        with self.assertRaises(TaskFailed) as e:
            boom(3)
        self.assertEqual(e.exception.reason["code"], "E_FUNCTION_THREW")
        self.assertIn("ValueError", e.exception.message)
        self.assertIn("bad 3", e.exception.message)
        # futures, as concurrent.futures has them
        fs = [boom.submit(i) for i in range(3)]
        self.assertTrue(all(isinstance(f.exception(timeout=60), TaskFailed) for f in fs))

    def test_a_version_mismatch_is_refused_before_any_call_naming_both(self):
        sys.path.insert(0, os.path.join(FIXTURES, "here"))
        try:
            ran = []
            f = self.c.remote(
                lambda: ran.append(1),
                check=["pf_skew_lib"],
                environment={"PYTHONPATH": os.path.join(FIXTURES, "there")},
            )
            before = {t["uid"] for t in self.c.tasks()}
            with self.assertRaises(VersionMismatch) as e:
                f()
            self.assertIn("pf_skew_lib 1.0 here, 2.0 on the workers", str(e.exception))
            # only the preflight ran: no call of the function was submitted
            new = [t for t in self.c.tasks() if t["uid"] not in before]
            self.assertEqual(len(new), 1)
            self.assertEqual(self.c.task(new[0]["uid"])["description"]["function"]["export"], "preflight")
            with self.assertRaises(VersionMismatch):
                f()  # refused again at once, from what the preflight found
        finally:
            sys.path.remove(os.path.join(FIXTURES, "here"))

    def test_python_and_cloudpickle_versions_are_compared(self):
        from pilotfish.remote import check_versions

        here = {"python": "3.12.1", "implementation": "CPython", "cloudpickle": "3.0.0", "libraries": {}}
        there = {"python": "3.11.2", "implementation": "CPython", "cloudpickle": "2.2.0",
                 "executable": "/usr/bin/python3", "libraries": {}}
        self.assertEqual(
            check_versions(here, there),
            [
                "Python CPython 3.12.1 here, CPython 3.11.2 on the workers (/usr/bin/python3)",
                "cloudpickle 3.0.0 here, 2.2.0 on the workers",
            ],
        )
        same = dict(there, python="3.11.9")
        self.assertEqual(check_versions(dict(here, python="3.11.2", cloudpickle="2.2.0"), same), [])

    def test_a_bad_resource_is_refused_by_the_service(self):
        f = self.c.remote(lambda: 1, cores=0)
        with self.assertRaises(PilotfishError) as e:
            f()
        self.assertEqual(e.exception.code, "E_VALIDATION")


if __name__ == "__main__":
    unittest.main()
