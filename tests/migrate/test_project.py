"""project: facts about the whole source tree (Horovod held in project module globals)."""

import ast

import pytest

from tf2npu.migrate.options import MigrateOptions
from tf2npu.migrate.project import horovod_holders, module_holders, module_path
from tf2npu.migrate.tree import make_plan, migrate_tree

WRAPPER = (
    "holder = None\n\n"
    "def init(use):\n"
    "    global holder\n"
    "    if use:\n"
    "        import horovod.tensorflow as hvd\n"
    "        hvd.init()\n"
    "        holder = hvd\n"
    "    else:\n"
    "        holder = Dummy()\n\n"
    "def rank():\n"
    "    return holder.rank()\n"
)
CONSUMER = (
    "from utils import wrapper as hvd\n"
    "opt = hvd.holder.DistributedOptimizer(opt)\n"
    "op = hvd.holder.allreduce(x, op=hvd.holder.Sum, name='n')\n"
    "r = hvd.rank()\n"
)


@pytest.mark.parametrize(
    ("rel", "path"),
    [("a/b.py", "a.b"), ("a/__init__.py", "a"), ("m.py", "m"), ("__init__.py", "__init__")],
)
def test_module_path(rel, path):
    assert module_path(rel) == path


def test_module_holders_needs_a_global_assigned_a_horovod_module():
    assert module_holders(ast.parse(WRAPPER)) == [("holder", "hvd")]
    local = "def f():\n    import horovod.tensorflow as hvd\n    h = hvd\n"
    assert module_holders(ast.parse(local)) == []  # a local variable is nobody else's business
    top = "import horovod.keras as hk\nH = hk\nG = hk.callbacks\n"
    assert module_holders(ast.parse(top)) == [("H", "hvd.keras")]


def test_horovod_holders_reads_files_and_skips_what_it_cannot_parse(tmp_path):
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "wrapper.py").write_text(WRAPPER)
    (tmp_path / "bad.py").write_text("import horovod\ndef (:\n")
    (tmp_path / "data.txt").write_text("horovod")
    files = [(p.relative_to(tmp_path).as_posix(), p) for p in sorted(tmp_path.rglob("*.*"))]
    files.append(("gone.py", tmp_path / "gone.py"))
    assert horovod_holders(files) == ("utils.wrapper.holder=hvd",)


def test_the_holder_pass_parses_with_the_cyclic_collector_paused(tmp_path, monkeypatch):
    import gc

    from tf2npu.migrate import project

    seen = []
    real_parse = project.parse

    def parse(raw, path):
        seen.append(gc.isenabled())
        return real_parse(raw, path)

    monkeypatch.setattr(project, "parse", parse)
    (tmp_path / "wrapper.py").write_text(WRAPPER)
    assert gc.isenabled()
    assert horovod_holders([("wrapper.py", tmp_path / "wrapper.py")]) == ("wrapper.holder=hvd",)
    assert seen == [False]
    assert gc.isenabled()  # on again after the pass
    project.forget_parsed()


def test_migrating_a_tree_rewrites_uses_through_another_files_holder(tmp_path):
    src = tmp_path / "src"
    (src / "utils").mkdir(parents=True)
    (src / "utils" / "wrapper.py").write_text(WRAPPER)
    (src / "train.py").write_text(CONSUMER)
    report = migrate_tree(make_plan(src, tmp_path / "out"), MigrateOptions())
    assert report.options["horovod_holders"] == ["utils.wrapper.holder=hvd"]
    train = (tmp_path / "out" / "train.py").read_text()
    assert "opt = NPUDistributedOptimizer(opt)\n" in train
    assert 'op = npu_allreduce(x, reduction="sum")\n' in train
    assert "r = hvd.rank()\n" in train  # the project's own function, not Horovod
    wrapper = (tmp_path / "out" / "utils" / "wrapper.py").read_text()
    assert "horovod" not in wrapper and "holder = True" in wrapper
    assert "return get_rank_id()" in wrapper


def test_a_file_without_name_to_name_assignments_builds_no_index(monkeypatch):
    from tf2npu.migrate import project

    def no_index(tree):
        raise AssertionError("ModuleIndex.build called")

    monkeypatch.setattr(project.ModuleIndex, "build", no_index)
    tree = ast.parse("import horovod.tensorflow as hvd\nhvd.init()\nx = hvd.rank()\n")
    assert module_holders(tree) == []
    with pytest.raises(AssertionError, match=r"ModuleIndex\.build called"):
        module_holders(ast.parse("import horovod.tensorflow as hvd\nH = hvd\n"))


def test_what_the_project_pass_read_is_taken_once_by_the_file_s_migration(tmp_path):
    from tf2npu.migrate import project

    (tmp_path / "wrapper.py").write_text(WRAPPER)
    (tmp_path / "plain.py").write_text("import horovod.tensorflow as hvd\nhvd.init()\n")
    raw = (tmp_path / "wrapper.py").read_bytes()
    plain = (tmp_path / "plain.py").read_bytes()
    try:
        horovod_holders(
            [("wrapper.py", tmp_path / "wrapper.py"), ("plain.py", tmp_path / "plain.py")]
        )
        taken = project.take_parsed(raw)
        assert taken is not None and taken.index is not None  # `holder = hvd`: indexed
        assert ast.dump(taken.tree) == ast.dump(ast.parse(WRAPPER))
        assert taken.source.text == WRAPPER
        assert project.take_parsed(raw) is None  # once
        untouched = project.take_parsed(plain)
        assert untouched is not None and untouched.index is None  # no `a = b`: no index built
        horovod_holders([("wrapper.py", tmp_path / "wrapper.py")])
        project.forget_parsed()
        assert project.take_parsed(raw) is None
    finally:
        project.forget_parsed()


def test_a_migrated_tree_leaves_nothing_read_behind(tmp_path):
    from tf2npu.migrate import project

    src = tmp_path / "src"
    src.mkdir()
    (src / "wrapper.py").write_text(WRAPPER)
    migrate_tree(make_plan(src, tmp_path / "out"), MigrateOptions())
    assert project._parsed == {}
