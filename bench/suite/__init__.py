"""Helpers of bench/run_suite.py: broker process, tools, scenarios, tables."""
