"""Host-only categories of TF op types, from name patterns.

An op type gets a category when it can never be compiled into a GeOp: the adapter refuses it
whatever the white list says (``*Dataset``, ``StringJoin``), it is absent from the white list
and its name says what it does (``PyFunc``, ``SaveV2``, ``ScalarSummary``), or it is a gray
white-list op of a kind that holds host state (string, queue, lookup-table ops). The same
function classifies shipped rows (``tools/derive_opinfo.py``) and op types missing from the
library, so ``FooDataset`` is ``dataset`` even when nobody listed it.
"""

from __future__ import annotations

import re

# Checked in order; the first match wins. Names are matched against the whole op type.
_PATTERNS: tuple[tuple[str, str], ...] = (
    ("dataset", r".*Dataset(V\d+)?|DatasetToGraph(V2)?|DatasetCardinality"),
    (
        "iterator",
        r"(Anonymous)?(OneShot)?Iterator(V\d+)?|MakeIterator|IteratorGetNext(Sync|AsOptional)?"
        r"|IteratorToStringHandle|IteratorFromStringHandle(V2)?|DeserializeIterator"
        r"|SerializeIterator|IteratorGetDevice|OptionalGetValue|OptionalHasValue"
        r"|OptionalFromValue|OptionalNone",
    ),
    ("py_func", r"(Eager)?PyFunc(Stateless)?"),
    (
        "save_restore",
        r"Save(V2|Slices)?|Restore(V2|Slice)?|MergeV2Checkpoints|ShardedFilename|ShardedFilespec",
    ),
    ("summary", r".*Summary(V2)?|WriteSummary|.*SummaryWriter|Write\w+Summary|FlushSummaryWriter"),
    (
        "resource_table",
        r".*HashTable(V2|OfTensors(V2)?)?|.*LookupTable\w*|InitializeTable\w*",
    ),
    (
        "string",
        r"String\w*|\w*ToString\w*|AsString|Substr|Regex\w+|Unicode\w*|StaticRegex\w+"
        r"|(Decode|Encode)(Base64|Jpeg|Png|Gif|Bmp|Wav|Raw|CSV|Compressed|JSONExample|Proto\w*)"
        r"|DecodeImage|ExtractJpegShape|ParseExample\w*|ParseSingle\w+|ParseSequenceExample\w*"
        r"|ReduceJoin|SerializeTensor|ParseTensor|Print(V2)?",
    ),
    ("file_io", r"\w*Reader(V2)?|Reader\w+|ReadFile|WriteFile|MatchingFiles"),
    (
        "queue",
        r"\w*Queue(V2)?|Queue\w+|Barrier\w*|Stage\w*|Unstage|\w*Map(Stage|Unstage\w*|Peek"
        r"|Size|Clear|IncompleteSize)|RecordInput",
    ),
    ("control", r"_(Host)?(Send|Recv)|_HostCast|Send|Recv"),
)

_COMPILED = tuple((name, re.compile(pattern)) for name, pattern in _PATTERNS)

# Categories that put an op on the host even when the white list carries it as a gray op:
# they produce or consume DT_STRING / DT_RESOURCE tensors of host state (reference §3.3).
GRAY_HOST_CATEGORIES = frozenset({"string", "resource_table", "queue"})

# The adapter refuses these whatever the white list says (reference §3.3).
ALWAYS_HOST = frozenset({"StringJoin"})

CATEGORIES = tuple(name for name, _ in _PATTERNS)


def category(op_type: str) -> str | None:
    """The host-only category an op type's name implies, or ``None``.

    >>> category("TensorDataset"), category("MatMul")
    ('dataset', None)
    """
    for name, pattern in _COMPILED:
        if pattern.fullmatch(op_type):
            return name
    return None


def host_only(op_type: str, *, listed: bool, gray: bool) -> str | None:
    """The host-only category of ``op_type`` given its white-list entry (``listed``, ``gray``)."""
    found = category(op_type)
    if found is None:
        return None
    if not listed or found == "dataset" or op_type in ALWAYS_HOST:
        return found
    return found if gray and found in GRAY_HOST_CATEGORIES else None
