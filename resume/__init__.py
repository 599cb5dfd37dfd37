"""resume: an exactly-once-effect TCP event consumer, and the suite that proves it.

* ``resume.client``    - the seven steps of the contract, one stdlib-only file.
* ``resume.publisher`` - a real asyncio publisher (the server side), for tests and demos.
* ``resume.receiver``  - runs ``run_client`` in a separate process that can be killed.
* ``python -m resume`` - the command line: ``serve``, ``consume``, ``demo``.
"""
