"""How the tests reach an implementation and its world (see ``resume.testing``)."""
