"""The sign-off report: the record of each check result, the platform fingerprint, waivers, and the
HTML (through pytest-html's hooks), JSON and JUnit outputs built from them. See README.md."""
from gpuconform.report.record import note_platform, record_retries

__all__ = ["note_platform", "record_retries"]
