"""hookgrad.tools: the hook toolkit users otherwise hand-write, built only on the public hook API."""
