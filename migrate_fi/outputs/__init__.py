"""What a run shows: text, JSON, GitHub and SARIF output (`reporting`, `sarif`), the pull
request description (`report`) and where it is posted (`pullrequest`), the inventory of
FlashInfer use (`usage`) and the rules' documentation (`docs`).

May import: everything below it (`run`, `verify`, and what they may import).
"""
