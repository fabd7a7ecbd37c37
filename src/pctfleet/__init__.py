"""pctfleet: fleet provisioner for GPU containers on Proxmox VE."""

__version__ = "0.1.0"


def __getattr__(name: str):  # noqa: ANN202
    # Lazy, so `pctfleet` (the CLI) does not pay for importing the API.
    if name in ("Container", "Fleet", "Result"):
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'pctfleet' has no attribute {name!r}")


__all__ = ["Container", "Fleet", "Result"]
