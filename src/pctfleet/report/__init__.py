"""`pctfleet report`: one self-contained page of the fleet (HTML or Markdown).

- `model`: what the page shows, built from one audit pass, verify, and the journals.
- `html`, `markdown`: the two renderings. Every string in them is data: escaped.
"""
