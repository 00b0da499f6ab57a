"""The packaged `base` rubric as data, for the one caller that must not pay for YAML.

`santa validate` without `--rubric`, in a project with no config and no
rubric of its own named `base`, judges a reply against the packaged `base`
(the rule is `load_rubric_arg` in cli/validate_cmd.py). Reading
`rubrics/base.yaml` would import PyYAML, which alone doubles the cold start
that bench/helper.py measures; this module holds the same rubric, and
tests/test_fail_open.py checks that it equals `load_rubric("base")`.
After changing `rubrics/base.yaml`, regenerate `DATA` with:

    python -c "import pprint; from santa_method.core.rubric import load_rubric; \\
        pprint.pprint(load_rubric('base').to_json(), width=96, sort_dicts=False)"
"""

from __future__ import annotations

from typing import Any

from santa_method.core.types import Criterion, Rubric

# fmt: off
DATA: dict[str, Any] = (
{'name': 'base',
 'criteria': [{'id': 'factual-accuracy',
               'name': 'Factual accuracy',
               'pass': 'Every factual statement in the output (names, numbers, dates, '
                       'versions, quotations, causes and effects) agrees with the spec, with '
                       'the sources the spec provides, or with facts a reviewer can check '
                       'independently; none contradicts them.',
               'fail_signals': ['A number, date, name or version that differs from the one in '
                                'the spec or its sources.',
                                'A statement that a checkable source contradicts.',
                                'Words attributed to a person or document that differ from '
                                'what the source says.']},
              {'id': 'no-hallucination',
               'name': 'No invented content',
               'pass': 'Everything the output presents as existing (functions, options, APIs, '
                       'files, URLs, citations, people, products, features, statistics) can be '
                       'traced to the spec, its sources, the codebase or the real world; '
                       'nothing is made up.',
               'fail_signals': ['A function, option, endpoint or file path that does not exist '
                                'in the named library, tool or codebase.',
                                'A citation, link, study or quotation that cannot be found.',
                                'A figure or statistic that appears in no source the spec '
                                'provides and cannot be verified.',
                                'A capability attributed to a product that the product '
                                'lacks.']},
              {'id': 'completeness',
               'name': 'Completeness',
               'pass': 'Every requirement, section, item and deliverable the spec asks for is '
                       'present in the output, in the number the spec names, and none of them '
                       'is left as a placeholder.',
               'fail_signals': ['A requirement of the spec with no corresponding part in the '
                                'output.',
                                'Fewer items than the spec asks for (for example three '
                                'examples where five are required).',
                                'A placeholder (TODO, TBD, an ellipsis, lorem ipsum) where the '
                                'spec requires content.',
                                'Only some parts of a multi-part request answered.']},
              {'id': 'compliance',
               'name': "Compliance with the spec's constraints",
               'pass': 'The output obeys every explicit constraint in the spec: format, length '
                       'limits, structure, language, tone, audience, and everything the spec '
                       'says must or must not be included.',
               'fail_signals': ['A word, character or line limit in the spec exceeded or not '
                                'reached.',
                                'A required format (JSON, a table, a heading layout, a file '
                                'structure) not followed.',
                                'Content the spec forbids is present.',
                                'Written in a language, register or for an audience other than '
                                'the one the spec names.']},
              {'id': 'internal-consistency',
               'name': 'Internal consistency',
               'pass': 'No two parts of the output contradict each other: names, figures, '
                       'terms, definitions and claims stay the same wherever they recur, and '
                       'every summary, table or conclusion matches the text it summarises.',
               'fail_signals': ['The same quantity given different values in different places.',
                                'A name, identifier or term spelled or defined differently in '
                                'different sections.',
                                'A summary, conclusion or table that disagrees with the '
                                'detailed text.',
                                'A step that depends on something an earlier step excluded.']},
              {'id': 'technical-correctness',
               'name': 'Technical correctness',
               'pass': 'Code, commands, formulas, configuration and technical explanations in '
                       'the output work as stated: syntax parses, APIs are called with their '
                       'real signatures, calculations give the stated results, and described '
                       'behaviour matches what the technology does. An output with no '
                       'technical content passes.',
               'fail_signals': ['Code, a command or configuration that would not parse, '
                                'compile or run.',
                                'An API called with arguments, types or a return value it does '
                                'not have.',
                                'A calculation whose stated result is wrong.',
                                'An account of how a system behaves that its documentation or '
                                'behaviour contradicts.']}]}
)
# fmt: on


def base() -> Rubric:
    """The packaged `base` rubric, as `load_rubric("base")` resolves it."""
    return Rubric(
        name=DATA["name"],
        criteria=tuple(
            Criterion(
                id=c["id"], name=c["name"], pass_=c["pass"], fail_signals=tuple(c["fail_signals"])
            )
            for c in DATA["criteria"]
        ),
    )
