"""Tests of the project's own tools (not of the contract: that is properties/ and stateful/)."""
