"""resume: an exactly-once-effect TCP event consumer, and the suite that proves it.

The product:

* ``resume.client``    - the seven steps of the contract, one stdlib-only file.
* ``resume.publisher`` - a real asyncio publisher (the server side).
* ``python -m resume`` - the command line: ``serve``, ``consume``, ``demo``, ``check``.

``resume.testing`` is the harness the verification suite shares (strategies,
peers, the store reader, the receiver process, the suite runner).
"""
