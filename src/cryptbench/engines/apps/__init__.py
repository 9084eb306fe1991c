"""The application workloads, by the name suites give them (`app = "…"`)."""

from __future__ import annotations

from cryptbench.engines.apps.base import AppEnv, AppResult, AppWorkload, Phase
from cryptbench.engines.apps.db_fsync import DbFsync
from cryptbench.engines.apps.dd_write import DdWrite
from cryptbench.engines.apps.folder_copy import FolderCopy
from cryptbench.engines.apps.mail_thread import MailThread
from cryptbench.engines.apps.photo_import import PhotoImport
from cryptbench.engines.apps.responsiveness import Responsiveness
from cryptbench.engines.apps.source_tree import SourceTree
from cryptbench.engines.apps.write_series import WriteSeries

_ALL = (PhotoImport, FolderCopy, SourceTree, MailThread, WriteSeries, DbFsync, DdWrite, Responsiveness)
APPS: dict[str, type[AppWorkload]] = {cls.app: cls for cls in _ALL}

__all__ = ["APPS", "AppEnv", "AppResult", "AppWorkload", "Phase"]
