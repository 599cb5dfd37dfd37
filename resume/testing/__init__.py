"""The harness the verification suite shares: ``resume.testing``.

Everything here serves the tests of ``properties/``, ``stateful/`` and
``quality/`` and the jobs; none of it is the product. The implementation under
test is never imported by name: ``loader`` loads the file that ``--impl`` /
``RESUME_IMPL`` names, and the ``impl`` fixture (``plugin``) hands it out.
Needs the ``test`` extra (Hypothesis, pytest, pytest-asyncio).
"""
