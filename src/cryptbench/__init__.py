"""cryptbench: what does encrypting storage cost on this machine?"""

__version__ = "0.1.0"
