"""Suites of a few lines, for the tests of ``resume check`` itself.

The grader runs whatever suite it is handed (``check.check(root=...)``,
``lanes.run_parts(root=...)``) exactly as it runs the real one: the same
lanes, the same plugin, the learner's file imported the same way. A test
whose claim is about the tool, not about the contract, hands it one of these
and pays for a test or two instead of a step's hundred.
"""

# A test of a part that must not run (its names are not written yet, or a part it waits for failed).
NEVER = "def test_it(impl):\n    assert False, 'this part was not to be run'\n"

# Steps 1 and 2, each a call a correct file passes; every later part one that must not run.
STEPS_ONE_AND_TWO = {
    "properties/test_step1_fake.py": "def test_a_frame(impl):\n    assert impl.parse_line(b'EVENT 0 5\\n') == (0, 5)\n",
    "properties/test_step2_fake.py": (
        "def test_a_new_store(impl, tmp_path):\n"
        "    con = impl.open_store(str(tmp_path / 'store.db'))\n"
        "    try:\n        assert impl.state(con) == (-1, 0)\n    finally:\n        con.close()\n"),
    **{f"properties/test_step{step}_fake.py": NEVER for step in range(3, 8)},
    "stateful/test_protocol.py": NEVER,
    "properties/test_depth_fake.py": NEVER,
}


# Step 1 alone: the suite's receiver process on the file under test, a session with the real publisher.
A_RECEIVER = {"properties/test_step1_fake.py": (
    "import asyncio\n"
    "from resume.publisher import Publisher\n"
    "from resume.testing.drivers import loader, receiver\n\n"
    "def test_a_receiver_process(impl, tmp_path):\n"
    "    async def session():\n"
    "        async with Publisher([(0, 5), (1, 7)]) as publisher:\n"
    "            return await receiver.run(loader.chosen_path(), publisher.port, tmp_path / 'store.db')\n"
    "    code, out, err = asyncio.run(session())\n"
    "    assert (code, out.strip()) == (0, 'last=1 total=12'), err\n")}


# Every suite's conftest.py imports Hypothesis, as the real suite's files do, so that the lanes'
# process has it when it forks them. Else each lane's pytest imports it at its end (Hypothesis's
# terminal summary): 0.2 s of CPU per lane, some seconds over the tests of the tools.
CONFTEST = "import hypothesis\n"


def write(root, files):
    """A suite at ``root``: conftest.py (CONFTEST, then ``files``' own if any) and each file of
    ``files`` (``{relative path: source}``)."""
    root.mkdir(parents=True)
    files = {**files, "conftest.py": CONFTEST + files.get("conftest.py", "")}
    for name, source in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(source)
    return root
