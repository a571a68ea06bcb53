"""Values read from the YAML configs beside linted code (``pitstop.lint.settings``), on files
written here: nested keys by indentation, a chain matched by its key path's end, agreement required."""

import ast

from pitstop.lint.settings import config_value


def value(expr: str, path):
    found = config_value(ast.parse(expr, mode="eval").body, str(path))
    return None if found is None else (found.value, found.line)


def test_nested_keys_by_indentation_and_comments(tmp_path):
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "run.yaml").write_text(
        "# run\ntrain:\n  num_workers: 0  # none\n  lr: 1.0e-3\n  flags: [a, b]\ntest:\n  num_workers: 8\n"
        "name: 'x'\nuse_gpu: true\n")
    script = tmp_path / "main.py"
    script.write_text("")
    assert value("hp.train.num_workers", script) == (0, 3)
    assert value("hp.test.num_workers", script) == (8, 7)
    assert value("config['train']['lr']", script) == (1e-3, 4)
    assert value("cfg.use_gpu", script) == (True, 9)
    assert value("cfg.name", script) == ("x", 8)
    assert value("hp.train.flags", script) is None  # a flow list: not read
    assert value("hp.num_workers", script) is None  # two keys end so and disagree (0 and 8): unknown
    assert value("hp.valid.num_workers", script) is None


def test_a_command_line_option_is_no_config_key(tmp_path):
    (tmp_path / "c.yml").write_text("workers: 0\n")
    script = tmp_path / "train.py"
    script.write_text("")
    assert value("args.workers", script) is None  # one name after an argparse namespace: not this file's key
    assert value("config.workers", script) == (0, 1)


def test_files_must_agree_and_hidden_folders_are_skipped(tmp_path):
    (tmp_path / "a.yaml").write_text("DATA:\n  WORKERS: 0\n")
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "ci.yaml").write_text("DATA:\n  WORKERS: 2\n")
    script = tmp_path / "main.py"
    script.write_text("")
    assert value("cfg.DATA.WORKERS", script) == (0, 2)
    (tmp_path / "b.yaml").write_text("DATA:\n  WORKERS: 4\n")
    assert value("cfg.DATA.WORKERS", script) is None  # two configs disagree: unknown
    assert value("self.cfg.DATA.WORKERS", script) is None  # rooted at self: an object's state, not followed


def test_no_file_no_value(tmp_path):
    assert value("cfg.DATA.WORKERS", tmp_path / "main.py") is None
    assert value("workers", tmp_path / "main.py") is None
