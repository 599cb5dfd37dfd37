"""Jobs that run the suite: the bounded fuzz job, the benchmark, the mutation score."""
