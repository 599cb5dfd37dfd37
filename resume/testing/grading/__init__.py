"""``resume check``: the suite run against a file and graded (see ``resume.testing``)."""
