"""Event and output streams that resume after their connection is cut: nothing missed,
nothing repeated."""

import os
import unittest

from support import CuttingProxy, client

from pilotfish import Client, FINAL


class StreamsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = client()
        cls.proxy = CuttingProxy(cls.c.url)
        cls.cut = Client(cls.proxy.url, os.environ["PILOTFISH_TOKEN"])

    @classmethod
    def tearDownClass(cls):
        cls.cut.close()
        cls.proxy.close()
        cls.c.close()

    def test_events_resume_after_cuts_missing_and_repeating_nothing(self):
        made = self.c.submit([{"executable": "/bin/true"} for _ in range(200)])
        uids = {m["uid"] for m in made}
        self.c.wait(uids, timeout=120)
        # the whole stream up to the last of these tasks' ends, read directly...
        direct = []
        left = set(uids)
        for ev in self.c.events():
            direct.append(ev)
            if ev.kind == "task" and ev.data["uid"] in left and ev.data["state"] in FINAL:
                left.discard(ev.data["uid"])
                if not left:
                    break
        # ... and through a proxy that drops every connection every 97 events
        through = []
        for ev in self.cut.events():
            through.append(ev)
            if len(through) % 97 == 0:
                self.proxy.cut()
            if len(through) == len(direct):
                break
        self.assertGreaterEqual(self.proxy.cuts, len(direct) // 97)
        self.assertEqual([e.id for e in through], [e.id for e in direct])
        self.assertEqual(through, direct)
        self.assertEqual([e.id for e in direct], list(range(direct[0].id, direct[0].id + len(direct))))

    def test_events_from_an_id_go_on_after_it(self):
        first = []
        for ev in self.c.events():
            first.append(ev)
            if len(first) == 10:
                break
        later = []
        for ev in self.c.events(after=first[4].id):
            later.append(ev)
            if len(later) == 5:
                break
        self.assertEqual(later, first[5:10])

    def test_followed_output_resumes_at_the_next_byte_after_cuts(self):
        script = "i=1; while [ $i -le 400 ]; do echo line $i; i=$((i+1)); sleep 0.005; done"
        [t] = self.c.submit([{"executable": "/bin/sh", "arguments": ["-c", script]}])
        chunks = []
        lines = 0
        for chunk in self.cut.output(t["uid"], follow=True):
            chunks.append(chunk)
            before, lines = lines, lines + chunk.count("\n")
            if lines // 40 > before // 40:
                self.proxy.cut()  # a cut each 40 lines, wherever the stream is then
        expected = "".join(f"line {i}\n" for i in range(1, 401))
        self.assertEqual("".join(chunks), expected)
        self.assertGreater(self.proxy.cuts, 1)
        self.assertEqual(self.c.output(t["uid"]), expected)

    def test_output_from_an_offset(self):
        [t] = self.c.submit([{"executable": "/bin/sh", "arguments": ["-c", "echo abc; echo def"]}])
        self.c.wait([t["uid"]], timeout=60)
        self.assertEqual(self.c.output(t["uid"], offset=4), "def\n")
        self.assertEqual("".join(self.c.output(t["uid"], follow=True, offset=4)), "def\n")


if __name__ == "__main__":
    unittest.main()
