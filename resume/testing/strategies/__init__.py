"""What the tests draw: values, arguments, foreign stores, runs (see ``resume.testing``)."""
