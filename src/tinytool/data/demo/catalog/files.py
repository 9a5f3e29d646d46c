"""Files: a small virtual home directory to list, read, search, inspect, move, delete and archive."""

from __future__ import annotations

import fnmatch
import posixpath
from random import Random

from tinytool.data.demo.catalog.base import (
    ToolError,
    ToolSpec,
    p_array,
    p_bool,
    p_enum,
    p_int,
    p_str,
    phrases,
    say_quoted,
)
from tinytool.data.demo.catalog.world import DIRECTORIES, FILE_KEYWORDS, TODAY, World

HOME = "/home/user"
PATTERNS = ("*.pdf", "report*", "invoice_*.txt", "*.jpg", "*notes*", "*.py", "*.txt", "*.md", "budget*")
EXTENSIONS = ("pdf", "txt", "jpg", "py", "md", "csv", "png")
ARCHIVES = ("backup", "invoices_2025", "project_files", "photos_archive", "notes_bundle")


def _files(w: World) -> dict:
    return w.state["files"]


def _dirs(w: World) -> set[str]:
    out = set(DIRECTORIES)
    for p in _files(w):
        d = posixpath.dirname(p)
        while d and d != "/":
            out.add(d)
            d = posixpath.dirname(d)
    return out


def _need_dir(w: World, directory: str) -> str:
    d = directory.rstrip("/") or "/"
    if d not in _dirs(w):
        raise ToolError(f"no such directory '{directory}'")
    return d


def _need_file(w: World, path: str) -> dict:
    f = _files(w).get(path)
    if f is None:
        raise ToolError(f"no such file '{path}'")
    return f


def _under(path: str, d: str) -> bool:
    return path.startswith(d.rstrip("/") + "/")


def list_files(w: World, directory: str, extension: str | None = None, recursive: bool = False) -> dict:
    d = _need_dir(w, directory)
    ext = extension.lower().lstrip(".") if extension else None
    entries = set()
    for p in _files(w):
        if not _under(p, d):
            continue
        rest = p[len(d.rstrip("/")) + 1:]
        if "/" in rest and not recursive:
            entries.add(rest.split("/")[0] + "/")
        elif ext is None or p.lower().endswith("." + ext):
            entries.add(rest)
    if ext is not None:
        entries = {e for e in entries if not e.endswith("/")}
    return {"directory": d, "entries": sorted(entries)}


def read_file(w: World, path: str, max_lines: int | None = None) -> dict:
    f = _need_file(w, path)
    if f["content"] is None:
        raise ToolError(f"'{path}' is a binary file")
    lines = f["content"].split("\n")
    if max_lines is not None:
        lines = lines[:max(0, max_lines)]
    return {"path": path, "content": "\n".join(lines)}


def search_files(w: World, query: str, directory: str = HOME) -> dict:
    d = _need_dir(w, directory)
    q = query.lower()
    hits = [p for p, f in sorted(_files(w).items()) if _under(p, d) and f["content"] and q in f["content"].lower()]
    return {"query": query, "matches": hits}


def find_files_by_name(w: World, pattern: str, directory: str = HOME) -> dict:
    d = _need_dir(w, directory)
    hits = [p for p in sorted(_files(w)) if _under(p, d) and fnmatch.fnmatch(posixpath.basename(p), pattern)]
    return {"pattern": pattern, "matches": hits}


def get_file_info(w: World, path: str) -> dict:
    f = _need_file(w, path)
    return {"path": path, "size_bytes": f["size_bytes"], "modified": f["modified"],
            "type": "text" if f["content"] is not None else "binary"}


def move_file(w: World, source: str, destination: str) -> dict:
    f = _need_file(w, source)
    dest = destination.rstrip("/")
    if dest in _dirs(w):
        dest = f"{dest}/{posixpath.basename(source)}"
    elif posixpath.dirname(dest) not in _dirs(w):
        raise ToolError(f"no such directory '{posixpath.dirname(dest)}'")
    if dest in _files(w):
        raise ToolError(f"'{dest}' already exists")
    del _files(w)[source]
    _files(w)[dest] = dict(f, path=dest)
    return {"status": "moved", "source": source, "destination": dest}


def delete_file(w: World, path: str, permanent: bool = False) -> dict:
    _need_file(w, path)
    f = _files(w).pop(path)
    if not permanent:
        trash = f"{HOME}/.trash/{posixpath.basename(path)}"
        _files(w)[trash] = dict(f, path=trash)
    return {"status": "deleted" if permanent else "moved to trash", "path": path}


def compress(w: World, paths: list, archive_name: str, format: str = "zip") -> dict:
    if not paths:
        raise ToolError("'paths' must list at least one file")
    size = sum(_need_file(w, p)["size_bytes"] for p in paths)
    out = f"{HOME}/{archive_name}.{format}"
    _files(w)[out] = {"path": out, "size_bytes": int(size * 0.6) + 200, "modified": TODAY.isoformat(), "content": None}
    return {"status": "created", "archive": out, "files": len(paths), "size_bytes": int(size * 0.6) + 200}


def _path(r: Random, w: World) -> str:
    return r.choice(sorted(_files(w)))


def _text_path(r: Random, w: World) -> str:
    return r.choice(sorted(p for p, f in _files(w).items() if f["content"] is not None))


def _dir(r: Random, w: World) -> str:
    return r.choice(DIRECTORIES)


def _fix_move(args: dict, r: Random, w: World) -> None:
    while args["destination"].rstrip("/") == posixpath.dirname(args["source"]):
        args["destination"] = _dir(r, w)


def say_path(v: str, r: Random) -> str:
    return v if r.random() < 0.7 else f"`{v}`"


def say_ext(v: str, r: Random) -> str:
    return r.choice((v, f".{v}", v.upper()))


TOOLS = [
    ToolSpec(
        "list_files", "files", "List the entries of a directory, optionally only one file type or recursively.",
        (p_str("directory", "Absolute directory path, e.g. '/home/user/documents'.", _dir, say=say_path, label="folder"),
         p_str("extension", "Only files with this extension (no dot), e.g. 'pdf'.", lambda r, w: r.choice(EXTENSIONS),
               say=say_ext, required=False),
         p_bool("recursive", "Include subdirectories.", {True: (", including subfolders", " recursively"),
                                                         False: (", top level only", " (no subfolders)")})),
        list_files,
        templates=("What's in {directory}[{recursive}]?", "List the[ {extension}] files in {directory}[{recursive}].",
                   "Show me all[ {extension}] files[ in {directory}][{recursive}].", "ls {directory}",
                   "Which[ {extension}] files are in the folder {directory}?"),
        substitutes=('find_files_by_name',), gist="list files in a folder", siblings=("find_files_by_name", "search_files", "get_file_info"),
    ),
    ToolSpec(
        "read_file", "files", "Read a text file's contents.",
        (p_str("path", "Absolute file path.", _text_path, say=say_path, label="file path"),
         p_int("max_lines", "Return at most this many lines.", lambda r, w: r.randint(1, 5), required=False)),
        read_file,
        templates=("Open {path} and show me what's in it.", "Read {path}[, first {max_lines} lines only].",
                   "What does {path} say?", "Show me the contents of the file[ {path}].",
                   "cat {path}"),
        substitutes=('list_files',), gist="read a file's contents", siblings=("get_file_info", "search_files"),
    ),
    ToolSpec(
        "search_files", "files", "Find files whose text contains a phrase (full-text search).",
        (p_str("query", "Text to look for inside files.", lambda r, w: r.choice(FILE_KEYWORDS), say=say_quoted,
               label="text to look for"),
         p_str("directory", "Directory to search under.", lambda r, w: r.choice(DIRECTORIES[:5]), say=say_path,
               default=HOME)),
        search_files,
        templates=("Find files mentioning {query}[ in {directory}].",
                   "Which of my files contain the text {query}[ under {directory}]?",
                   "Search inside my files for {query}[, starting at {directory}].",
                   "grep my files for {query}"),
        gist="search inside files for text", siblings=("find_files_by_name", "list_files", "search_products"),
    ),
    ToolSpec(
        "find_files_by_name", "files", "Find files whose name matches a glob pattern such as '*.pdf'.",
        (p_str("pattern", "Glob pattern for the file name, e.g. 'report*' or '*.jpg'.", lambda r, w: r.choice(PATTERNS),
               say=lambda v, r: say_quoted(v, r) if r.random() < 0.6 else v, label="file name pattern"),
         p_str("directory", "Directory to search under.", lambda r, w: r.choice(DIRECTORIES[:6]), say=say_path,
               default=HOME)),
        find_files_by_name,
        templates=("Find files named {pattern}[ in {directory}].", "Look for files matching {pattern}[ under {directory}].",
                   "Where are the files called {pattern}?", "Locate anything matching {pattern}[ inside {directory}]."),
        gist="find files by name", siblings=("search_files", "list_files"),
    ),
    ToolSpec(
        "get_file_info", "files", "Get a file's size, type and last-modified date.",
        (p_str("path", "Absolute file path.", _path, say=say_path, label="file path"),), get_file_info,
        templates=("How big is {path}?", "When was {path} last modified?", "Get the file info for {path}.",
                   "Show size and date[ for {path}]."),
        gist="get a file's size and date", siblings=("read_file", "list_files"),
    ),
    ToolSpec(
        "move_file", "files", "Move a file to another directory or path.",
        (p_str("source", "Path of the file to move.", _path, say=say_path, label="file"),
         p_str("destination", "Target directory or full target path.", _dir, say=say_path, label="destination folder")),
        move_file,
        templates=("Move {source} to {destination}.", "Put {source} into {destination}.",
                   "Relocate the file {source}[ to {destination}].", "mv {source} {destination}"),
        gist="move a file", siblings=("delete_file", "files.compress"), fix=_fix_move,
    ),
    ToolSpec(
        "delete_file", "files", "Delete a file (to the trash unless permanent).",
        (p_str("path", "Absolute file path.", _path, say=say_path, label="file"),
         p_bool("permanent", "Delete permanently instead of moving to the trash.",
                {True: (" permanently", ", skip the trash"), False: (" (just move it to the trash)", ", to the trash")})),
        delete_file,
        templates=("Delete {path}[{permanent}].", "Remove the file {path}[{permanent}].",
                   "Get rid of a file[: {path}].", "Trash {path}."),
        gist="delete a file", siblings=("move_file", "delete_event"),
    ),
    ToolSpec(
        "files.compress", "files", "Pack files into a zip or tar.gz archive in the home directory.",
        (p_array("paths", "Files to include.", {"type": "string"}, lambda r, w: r.sample(sorted(_files(w)), r.randint(2, 3)),
                 label="list of files"),
         p_str("archive_name", "Archive file name without extension.", lambda r, w: r.choice(ARCHIVES), label="archive name"),
         p_enum("format", "Archive format.", ("zip", "tar.gz"), default="zip",
                say=phrases({"zip": ("zip", "a zip file"), "tar.gz": ("tar.gz", "a gzipped tarball")}))),
        compress,
        templates=("Compress {paths} into an archive called {archive_name}[ ({format})].",
                   "Make an archive named {archive_name} from {paths}[ as {format}].",
                   "Bundle {paths} together[ — call it {archive_name}]."),
        gist="compress files into an archive", siblings=("move_file", "list_files"), held_out=True,
    ),
]
