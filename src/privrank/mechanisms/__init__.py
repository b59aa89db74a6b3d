"""The privacy boundary: the only code that draws privacy noise."""
