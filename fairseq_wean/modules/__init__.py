"""Pieces shared by the three models: encoder, attention and score functions, layers."""
