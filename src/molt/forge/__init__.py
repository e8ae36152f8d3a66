"""MindForge: reinforcement learning over MinT (training) and an OpenAI-compatible engine (sampling).

``trajectory``: what one episode produced, and how it becomes MinT Datums. ``advantages``:
group-relative advantages (GRPO) and dropping groups that teach nothing.
"""
