"""resume: an exactly-once-effect TCP event consumer, and the suite that proves it.

The product:

* ``resume.client``    - the seven steps of the contract, one stdlib-only file.
* ``resume.publisher`` - a real asyncio publisher (the server side).
* ``resume`` (or ``python -m resume``) - the command line: ``serve``, ``consume``,
  ``demo``, ``check`` (``resume.cli``; it checks the user's input with
  ``resume.inputs``, and the demo is ``resume.demo``).

``resume.testing`` is the harness the verification suite shares (strategies,
peers, the store reader, the receiver process, the suite runner).
"""
