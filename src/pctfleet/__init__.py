"""pctfleet: fleet provisioner for GPU containers on Proxmox VE."""

__version__ = "0.1.0"
