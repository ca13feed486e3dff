"""The run engine: the agent, the drive loop, tool batches, hook dispatch,
and the parts an agent is built from."""
