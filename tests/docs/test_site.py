"""The docs site's structure, checked without building it: every page of docs/ is in mkdocs.yml's nav and every
nav entry is a page, the README's and the pages' links to pages resolve, and the README's algorithm table is the
Algorithms page's; the build asks for nothing the docs extra lacks, and code blocks wrap their long lines.
`mkdocs build --strict` in CI checks the rest (anchors, the API reference)."""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any, Iterator

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / 'docs'
LINK = re.compile(r'!?\[[^\]]*\]\(([^)\s]+)\)')
BLOCK = re.compile(r'^```.*?^```$', re.MULTILINE | re.DOTALL)


def nav_pages(entry: Any) -> Iterator[str]:
    """The page paths of a nav entry: a path, a {title: entry} mapping or a list of entries."""
    if isinstance(entry, str):
        if not re.match(r'\w+://', entry):
            yield entry
    elif isinstance(entry, dict):
        for value in entry.values():
            yield from nav_pages(value)
    else:
        for item in entry:
            yield from nav_pages(item)


def mkdocs_config() -> dict[str, Any]:
    return yaml.safe_load((ROOT / 'mkdocs.yml').read_text())


def nav() -> list[str]:
    config = mkdocs_config()
    assert config.get('docs_dir', 'docs') == 'docs'
    return list(nav_pages(config['nav']))


def extras() -> dict[str, list[str]]:
    """setup.py's extras_require, read without running setup.py."""
    for node in ast.walk(ast.parse((ROOT / 'setup.py').read_text())):
        if isinstance(node, ast.keyword) and node.arg == 'extras_require':
            return ast.literal_eval(node.value)
    raise AssertionError('setup.py has no extras_require')


def links(path: Path) -> list[str]:
    """The relative link targets of a markdown file, outside fenced blocks, without their anchors."""
    text = BLOCK.sub('', path.read_text())
    targets = [target.split('#')[0] for target in LINK.findall(text)]
    return [target for target in targets if target and not re.match(r'\w+:', target)]


def test_every_page_is_in_the_nav_once():
    pages = sorted(str(path.relative_to(DOCS)) for path in DOCS.rglob('*.md'))
    listed = nav()
    assert sorted(set(pages) - set(listed)) == []
    assert len(listed) == len(set(listed)), 'a page is listed twice'


def test_every_nav_entry_is_a_page():
    assert [page for page in nav() if not (DOCS / page).is_file()] == []


def test_the_readme_links_resolve_and_its_pages_are_in_the_nav():
    targets = links(ROOT / 'README.md')
    assert [target for target in targets if not (ROOT / target).exists()] == []
    pages = [str(Path(target).relative_to('docs')) for target in targets if target.startswith('docs/')]
    assert len(pages) >= 20
    assert sorted(set(pages) - set(nav())) == []


def test_the_pages_link_to_pages_that_exist():
    broken = [(str(page.relative_to(DOCS)), target) for page in DOCS.rglob('*.md') for target in links(page)
              if not (page.parent / target).is_file()]
    assert broken == []


def test_the_readme_lists_the_algorithms_pages_policies_in_one_short_line_each():
    def rows(path: Path) -> list[list[str]]:
        section = path.read_text().split('# Algorithms\n', 1)[1].split('\n## ', 1)[0]
        return [line.split(' | ') for line in section.splitlines() if line.startswith('| `')]
    readme, page = rows(ROOT / 'README.md'), rows(DOCS / 'algorithms.md')
    assert [row[:2] for row in readme] == [row[:2] for row in page]  # policy and action space
    assert len(page) >= 10
    long = [row[0] for row in readme if len(' | '.join(row)) > 420]  # the detail lives on the Algorithms page
    assert not long, f'README rows longer than 420 characters: {long}'


def test_the_docs_extra_has_black_to_format_the_api_signatures_and_ci_builds_with_the_same_packages():
    # separate_signature makes mkdocstrings format each signature with Black or Ruff; without either it prints a line
    # asking for one at every build
    [plugin] = [entry['mkdocstrings'] for entry in mkdocs_config()['plugins']
                if isinstance(entry, dict) and 'mkdocstrings' in entry]
    options = plugin['handlers']['python']['options']
    assert options['separate_signature'] is True
    docs, test = extras()['docs'], extras()['test']
    assert [requirement for requirement in docs if requirement.startswith('black')] == ['black>=24']
    assert sorted(set(docs) - set(test)) == []


def test_code_blocks_wrap_long_lines_with_the_sites_own_stylesheet():
    assert mkdocs_config()['extra_css'] == ['stylesheets/extra.css']
    rule = re.search(r'\.md-typeset pre > code \{([^}]*)\}', (DOCS / 'stylesheets' / 'extra.css').read_text())
    assert rule is not None
    declarations = {name.strip(): value.strip() for name, value in
                    (line.split(':') for line in rule.group(1).split(';') if line.strip())}
    assert declarations == {'white-space': 'pre-wrap', 'overflow-wrap': 'anywhere'}
