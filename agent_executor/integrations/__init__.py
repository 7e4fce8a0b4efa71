"""Integrations with other platforms, each behind its own optional extra.

Nothing is imported here on purpose: ``import agent_executor`` must not need slack-sdk or any
other extra. Import the integration you use directly, e.g.
``from agent_executor.integrations.slack import SlackStreamer`` (``pip install
agent-executor[slack]``).
"""
