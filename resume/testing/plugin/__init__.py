"""The pytest and Hypothesis side of the kit (see ``resume.testing``)."""
