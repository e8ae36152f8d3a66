"""The recursive self-improvement loop: ``molt evolve`` and the learning worker of ``molt up``.

One generation turns the production (model, harness) pair into a candidate and lets an external
contract decide: discovery (harder variants of the problem bank), expansion (HCP edits searched on
the failing slice), update (successful trajectories → a dataset → a new adapter revision through
MinT) and gate (the contract's held-out suites, a paired bootstrap, promote or reject).
"""
