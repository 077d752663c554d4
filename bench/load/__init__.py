"""Helpers of bench/bench_load.py: the load test's database and its Streamlit websocket client."""
