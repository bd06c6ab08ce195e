"""Fault campaigns: the history of what clients did while faults were injected, and the
checker that reads it afterwards (`kafkagen.chaos.history`, `kafkagen.chaos.checker`)."""
