// Unit tests of the Jinja interpreter. Every expected string below was produced by Python
// Jinja2 3.1.2 with transformers' settings (ImmutableSandboxedEnvironment, trim_blocks,
// lstrip_blocks, loopcontrols, json.dumps tojson), not by this code.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "text/jinja/template.h"

namespace proctor::jinja {
namespace {

Dict TestContext() {
  const auto json = nlohmann::ordered_json::parse(R"({
    "items": [3, 1, 2],
    "d": {"b": 1, "a": 2},
    "users": [{"name": "ann", "admin": true, "age": 30}, {"name": "bob", "admin": false, "age": 25}]
  })");
  Dict context;
  for (const auto& [k, v] : json.items()) context.Set(k, FromJson(v));
  return context;
}

std::string Render(const std::string& source, const RenderOptions& options = {}) {
  return Template::Parse(source, "test").Render(TestContext(), options);
}

struct Case {
  const char* source;
  const char* expected;
};

void ExpectAll(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    try {
      EXPECT_EQ(Render(c.source), c.expected) << "template: " << c.source;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "template: " << c.source << "\nthrew: " << e.what();
    }
  }
}

TEST(Jinja, OperatorsAndPrecedence) {
  ExpectAll({
      {"{{ 2 ** 3 ** 2 }}|{{ -2 ** 2 }}|{{ 1 + 2 * 3 }}|{{ -7 // 2 }}|{{ -7 % 3 }}|{{ 7 / 2 }}|{{ "
       "6 / 2 }}",
       "64|4|7|-4|2|3.5|3.0"},
      {"{{ 'a' ~ (1 + 2) }}|{{ not 1 == 2 }}|{{ 1 < 2 < 3 }}|{{ 3 > 2 > 2 }}|{{ 0 or 'x' }}|"
       "{{ 1 and 0 }}|{{ 'b' in 'abc' }}|{{ 2 not in [1] }}",
       "a3|True|True|False|x|0|True|True"},
      {"{{ 'x' if false }}|{{ 'x' if false else 'y' }}|{{ 'yes' if items else 'no' }}|{{ (1, 2) }}|"
       "{{ [1, 2] == [1, 2] }}|{{ (1, 2) == [1, 2] }}|{{ 1 == 1.0 }}|{{ true == 1 }}|{{ 'a' < 'b' "
       "}}|"
       "{{ [1, 2] < [1, 3] }}",
       "|y|yes|(1, 2)|True|False|True|True|True|True"},
      {"{{ 'a' ~ none ~ 1 ~ x }}|{{ 'ab' * 3 }}|{{ [1] * 2 }}|{{ [1] + [2] }}|{{ \"%s-%d\" % ('a', "
       "3) }}|"
       "{{ 'x' + 'y' }}|{{ 1 + 2.5 }}|{{ 2 * 3.0 }}|{{ 10 - 3 }}|{{ 7 // 2.0 }}|{{ -7.5 % 2 }}",
       "aNone1|ababab|[1, 1]|[1, 2]|a-3|xy|3.5|6.0|7|3.0|0.5"},
  });
}

TEST(Jinja, PythonReprOfValues) {
  ExpectAll({
      {"{{ [1, 'a', none, true, 1.5, (1,), {'k': 'v'}] }}|{{ 1e3 }}|{{ 0.1 + 0.2 }}|{{ 1/3 }}|"
       "{{ 2.5e-7 }}",
       "[1, 'a', None, True, 1.5, (1,), {'k': 'v'}]|1000.0|0.30000000000000004|0.3333333333333333|"
       "2.5e-07"},
      {"{{ \"it's\" }}|{{ [\"it's\", 'a\"b', 'new\\nline'] }}",
       "it's|[\"it's\", 'a\"b', 'new\\nline']"},
  });
}

TEST(Jinja, StringsAreCodePoints) {
  ExpectAll({
      {"{{ \"h\xc3\xa9llo\"|length }}|{{ \"h\xc3\xa9llo\"[1:3] }}|{{ \"h\xc3\xa9llo\"|reverse }}|"
       "{{ \"h\xc3\xa9llo\"[::-2] }}|{{ items[-1] }}|{{ items[5] }}|{{ items[:-1] }}",
       "5|\xc3\xa9l|oll\xc3\xa9h|olh|2||[3, 1]"},
      {"{% for c in 'h\xc3\xa9y' %}[{{ c }}]{% endfor %}", "[h][\xc3\xa9][y]"},
  });
}

TEST(Jinja, Statements) {
  ExpectAll({
      {"{% for x in [] %}x{% else %}empty{% endfor %}|{% for x in items if x > 1 %}{{ x }}"
       "{{ loop.index }}{% endfor %}|{% for x in items %}{% if x == 1 %}{% continue %}{% endif %}"
       "{% if x == 2 %}{% break %}{% endif %}{{ x }}{% endfor %}",
       "empty|3122|3"},
      {"{% if false %}a{% elif 0 %}b{% elif 'x' %}c{% else %}d{% endif %}", "c"},
      {"{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}|{% for k in d %}{{ k }}{% endfor "
       "%}",
       "b=1,a=2,|ba"},
      {"{% set ns = namespace(total=0, seen=[]) %}{% for x in items %}{% set ns.total = ns.total + "
       "x %}"
       "{% endfor %}{{ ns.total }}|{% set n = 1 %}{% for x in items %}{% set n = x %}{% endfor "
       "%}{{ n }}",
       "6|1"},
      {"{% set x = 0 %}{% for i in [1,2] %}{{ x }}{% set x = i %}{{x}}{% endfor %}{{ x }}",
       "01020"},
      {"{% if true %}{% set z = 3 %}{% endif %}{{ z }}", "3"},
      {"{% set a, b = 1, 2 %}{{ b }}{{ a }}", "21"},
      {"{% filter upper %}abc{{ 'd' }}{% endfilter %}|{% set block %}  Hi {{ 1 }}  {% endset %}"
       "[{{ block }}]|{% set t | trim %}  padded  {% endset %}[{{ t }}]|{% raw %}{{ not rendered }}"
       "{% endraw %}",
       "ABCD|[  Hi 1  ]|[padded]|{{ not rendered }}"},
      {"{% generation %}kept{% endgeneration %}", "kept"},
  });
}

TEST(Jinja, LoopVariables) {
  ExpectAll({
      {"{% for x in items %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 "
       "}}"
       "{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}"
       "{{ loop.cycle('a','b') }};{% endfor %}",
       "1032TrueFalse31a;2121FalseFalse332b;3210FalseTrue31a;"},
      {"{% for item in [{'n': 'a', 'c': [{'n': 'b', 'c': []}]}] recursive %}{{ item.n }}"
       "{{ loop.depth }}({{ loop(item.c) }}){% endfor %}",
       "a1(b2())"},
  });
}

TEST(Jinja, MacrosAndCallBlocks) {
  ExpectAll({
      {"{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}"
       "{{ greet('Ann') }}|{{ greet('Bob', greeting='Hi') }}|{{ greet(greeting='Yo', name='Cy') }}",
       "Hello, Ann!|Hi, Bob!|Yo, Cy!"},
      {"{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}",
       "(1, 2){'k': 3}"},
      {"{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') "
       "%}"
       "bold{% endcall %}|{% macro each(xs) %}{% for x in xs %}{{ caller(x) }}{% endfor %}{% "
       "endmacro %}"
       "{% call(v) each([1,2]) %}({{ v }}){% endcall %}",
       "<b>bold</b>|(1)(2)"},
      {"{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * fact(n - 1)|int }}{% endif %}{% "
       "endmacro %}"
       "{{ fact(5) }}",
       "120"},
      {"{% macro m(a) %}{{a}}{{g}}{% endmacro %}{% set g = 5 %}{{ m(1) }}{% set g = 6 %}{{ m(2) }}",
       "1526"},
  });
}

TEST(Jinja, Tests) {
  ExpectAll({
      {"{{ 1 is odd }}{{ 2 is even }}{{ 9 is divisibleby 3 }}{{ x is defined }}{{ x is undefined }}"
       "{{ none is none }}{{ 'a' is string }}{{ d is mapping }}{{ items is iterable }}"
       "{{ 1 is iterable }}{{ 'a' is sequence }}{{ 1 is number }}{{ 1.0 is float }}{{ 1 is integer "
       "}}"
       "{{ true is boolean }}{{ false is false }}{{ true is true }}{{ 1 is true }}{{ 'ab' is lower "
       "}}"
       "{{ 'AB' is upper }}{{ 2 is eq 2 }}{{ 2 is equalto 3 }}{{ 2 is in [2] }}{{ range is "
       "callable }}"
       "{{ none is sameas none }}{{ 1 is not none }}{{ 3 is gt 2 }}{{ 3 is lessthan 2 }}",
       "TrueTrueTrueFalseTrueTrueTrueTrueTrueFalseTrueTrueTrueTrueTrueTrueTrueFalseTrueTrueTrueFals"
       "e"
       "TrueTrueTrueTrueTrueFalse"},
  });
}

TEST(Jinja, Filters) {
  ExpectAll({
      {"{{ d|tojson }}|{{ d|tojson(indent=2) }}|{{ {'x': [1, {'y': '\xc3\xa9\"\\n'}], 'e': [], "
       "'o': {}}|tojson }}|{{ d|tojson(sort_keys=true) }}|{{ [1,2]|tojson(separators=(',', ':')) "
       "}}",
       "{\"b\": 1, \"a\": 2}|{\n  \"b\": 1,\n  \"a\": 2\n}|{\"x\": [1, {\"y\": "
       "\"\xc3\xa9\\\"\\n\"}], "
       "\"e\": [], \"o\": {}}|{\"a\": 2, \"b\": 1}|[1,2]"},
      {"{{ users|selectattr('admin')|map(attribute='name')|join(',') }}|{{ "
       "users|rejectattr('admin')"
       "|map(attribute='name')|list }}|{{ users|selectattr('age', 'gt', 26)|map(attribute='name')"
       "|first }}|{{ users|map(attribute='age')|sum }}|{{ users|sort(attribute='age')"
       "|map(attribute='name')|join }}|{{ users|max(attribute='age') }}",
       "ann|['bob']|ann|55|bobann|{'name': 'ann', 'admin': True, 'age': 30}"},
      {"{{ items|sort }}|{{ items|sort(reverse=true) }}|{{ items|first }}|{{ items|last }}|"
       "{{ [3,1,3,2]|unique|list }}|{{ d|dictsort }}|{{ d|items|list }}|{{ items|reverse|list }}",
       "[1, 2, 3]|[3, 2, 1]|3|2|[3, 1, 2]|[('a', 2), ('b', 1)]|[('b', 1), ('a', 2)]|[2, 1, 3]"},
      {"{{ '  hi  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'Hello World'|upper }}|{{ 'Hello "
       "World'|lower }}|"
       "{{ 'hello wORLD'|capitalize }}|{{ 'hello wORLD-foo'|title }}|{{ 'a-b-a'|replace('a', 'X') "
       "}}|"
       "{{ 'a-b-a'|replace('a', 'X', 1) }}",
       "hi|hi|HELLO WORLD|hello world|Hello world|Hello World-Foo|X-b-X|X-b-a"},
      {"{{ '12'|int + 1 }}|{{ '1.9'|int }}|{{ 'x'|int }}|{{ 'x'|int(7) }}|{{ 3.9|int }}|{{ "
       "'2.5'|float }}|"
       "{{ 5|string ~ 'a' }}|{{ none|string }}|{{ -3|abs }}|{{ 2.5|round }}|{{ 3.5|round }}|"
       "{{ 2.345|round(2) }}|{{ 2.1|round(method='ceil') }}",
       "13|1|0|7|3|2.5|5a|None|3|2.0|4.0|2.35|3.0"},
      {"{{ x|default('dflt') }}|{{ ''|default('dflt') }}|{{ ''|default('dflt', true) }}|"
       "{{ none|default('n') }}|{{ x|length }}|{{ 'a b  c'|wordcount }}|{{ "
       "[1,2,3,4,5]|batch(2)|list }}|"
       "{{ 'ab'|center(6) }}|{{ 'a\\nb\\n\\nc'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}",
       "dflt||dflt|None|0|3|[[1, 2], [3, 4], [5]]|  ab  |a\n  b\n\n  c|  a\n  b"},
  });
}

TEST(Jinja, MethodsOfStrDictList) {
  ExpectAll({
      {"{{ '  a b  '.strip() }}|{{ 'xxaxx'.lstrip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b c "
       "'.split() }}|"
       "{{ 'a b c'.split(' ', 1) }}|{{ 'a b c'.rsplit(' ', 1) }}|{{ 'abc'.startswith(('x', 'a')) "
       "}}|"
       "{{ 'abc'.endswith('bc') }}|{{ 'abcb'.find('b') }}|{{ 'abcb'.rfind('b') }}|"
       "{{ '-'.join(['a', 'b']) }}|{{ '{} and {}'.format(1, 'x') }}|{{ 'aXbX'.replace('X', '') }}|"
       "{{ 'abc'.upper() }}|{{ 'aaa'.count('a') }}",
       "a b|axx|['a', 'b', '', 'c']|['a', 'b', 'c']|['a', 'b c']|['a b', 'c']|True|True|1|3|a-b|1 "
       "and x|"
       "ab|ABC|3"},
      {"{{ d.get('a') }}|{{ d.get('z') }}|{{ d.get('z', 5) }}|{{ d.keys()|list }}|{{ "
       "d.values()|list }}|"
       "{{ d.items()|list }}|{{ d['b'] }}|{{ d.b }}|{{ d.zz is defined }}",
       "2|None|5|['b', 'a']|[1, 2]|[('b', 1), ('a', 2)]|1|1|False"},
  });
}

TEST(Jinja, GlobalFunctions) {
  ExpectAll({
      {"{{ range(3)|list }}{{ range(1, 7, 2)|list }}{{ dict(a=1, b=2) }}{% set c = cycler('x', "
       "'y') %}"
       "{{ c.next() }}{{ c.next() }}{{ c.next() }}{{ c.current }}{% set j = joiner('+') %}{{ j() "
       "}}a"
       "{{ j() }}b",
       "[0, 1, 2][1, 3, 5]{'a': 1, 'b': 2}xyxya+b"},
  });
}

TEST(Jinja, WhitespaceControl) {
  ExpectAll({
      {"<ul>\n  {% for x in [1,2] %}\n    <li>{{ x }}</li>\n  {% endfor %}\n</ul>\n",
       "<ul>\n    <li>1</li>\n    <li>2</li>\n</ul>"},
      {"a  {%- if true -%}  b  {%- endif -%}  c", "abc"},
      {"a\n  {{- 'x' -}}\n  b", "axb"},
      {"  {%+ if true %}x{% endif +%}\ny", "  x\ny"},
      {"line\n    {# comment #}\nnext", "line\nnext"},
      {"a {# c -#}   \n  b", "a b"},
      {"x  {% if true %}y{% endif %}\nz", "x  yz"},
      {"{% if true %}\r\nA\r\n{% endif %}\r\nB\r\n", "A\nB"},
      {"text\n\n", "text\n"},
      {"{{ 'a' }}\n{{ 'b' }}\n", "a\nb"},
      {"  {% raw %}  {{ x }}\n{% endraw %}\nafter", "  {{ x }}\nafter"},
      {"{%- raw -%}  keep {{ }}  {%- endraw -%}  z", "keep {{ }}z"},
      {"{% set x = {'a': {'b': 1}} %}{{ x.a.b }}{{ {'k': {'n': 2}}['k'] }}", "1{'n': 2}"},
      {"{% if true %}  \n  x\n{% endif %}", "  \n  x\n"},
      {"a\t{% if 1 %}b{% endif %}", "a\tb"},
      {"\t {% if 1 %}\n  z\n \t{% endif %}\n", "  z\n"},
  });
}

// ---- errors ---------------------------------------------------------------------------------

TemplateError RenderError(const std::string& source, const RenderOptions& options = {}) {
  try {
    Render(source, options);
  } catch (const TemplateError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an error from: " << source;
  return TemplateError(ErrorKind::kType, "", 0, "");
}

TEST(JinjaErrors, SyntaxErrorsNameTheLine) {
  struct SyntaxCase {
    const char* source;
    int line;
    const char* message;
  };
  const SyntaxCase cases[] = {
      {"a\nb\n{% endif %}", 3, "Encountered unknown tag 'endif'."},
      {"{{ x | nosuchfilter }}", 1, "No filter named 'nosuchfilter'."},
      {"\n{{ x is nosuchtest }}", 2, "No test named 'nosuchtest'."},
      {"{% if x %}\n\nno end", 2,  // Jinja2 names the line where the last token starts
       "Unexpected end of template. Jinja was looking for the following tags: 'elif' or 'else' or "
       "'endif'. The innermost block that needs to be closed is 'if'."},
      {"{% if %}", 1, "Expected an expression, got 'end of statement block'"},
      {"x\n{{ 1 + }}", 2, "unexpected 'end of print statement'"},
      {"{% include 'other.txt' %}", 1, "Encountered unknown tag 'include'."},
      {"{# unterminated", 1, "Missing end of comment tag"},
  };
  for (const SyntaxCase& c : cases) {
    try {
      Template::Parse(c.source, "t.jinja");
      ADD_FAILURE() << "no syntax error for " << c.source;
    } catch (const TemplateError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kSyntax) << c.source;
      EXPECT_EQ(e.line(), c.line) << c.source;
      EXPECT_EQ(e.message(), c.message) << c.source;
      EXPECT_NE(std::string(e.what()).find(fmt::format("t.jinja:{}:", c.line)), std::string::npos)
          << e.what();
    }
  }
}

TEST(JinjaErrors, RuntimeErrorsAsJinja2RaisesThem) {
  TemplateError e = RenderError("ok\n{{ raise_exception('bad role order') }}");
  EXPECT_EQ(e.kind(), ErrorKind::kRaised);
  EXPECT_EQ(e.message(), "bad role order");
  EXPECT_EQ(e.line(), 2);
  e = RenderError("{{ d.x.y }}");
  EXPECT_EQ(e.kind(), ErrorKind::kUndefined);
  EXPECT_EQ(e.message(), "'dict object' has no attribute 'x'");
  e = RenderError("{{ items[3].y }}");
  EXPECT_EQ(e.message(), "list object has no element 3");
  e = RenderError("{{ u + 1 }}");
  EXPECT_EQ(e.message(), "'u' is undefined");
  e = RenderError("{{ 'a' + 1 }}");
  EXPECT_EQ(e.kind(), ErrorKind::kType);
  EXPECT_EQ(e.message(), "can only concatenate str (not \"int\") to str");
  e = RenderError("{{ items.append(4) }}");
  EXPECT_EQ(e.kind(), ErrorKind::kSecurity);
  EXPECT_EQ(e.message(), "access to attribute 'append' of 'list' object is unsafe.");
  e = RenderError("{{ d.__class__.__name__ }}");
  EXPECT_EQ(e.kind(), ErrorKind::kSecurity);
  e = RenderError("{% for x in 5 %}{% endfor %}");
  EXPECT_EQ(e.message(), "'int' object is not iterable");
  e = RenderError("{{ 1 < 'a' }}");
  EXPECT_EQ(e.message(), "'<' not supported between instances of 'int' and 'str'");
  e = RenderError("{% set x = 1 %}{% set x.y = 2 %}");
  EXPECT_EQ(e.message(), "cannot assign attribute on non-namespace object");
}

// Integer arguments of another type are Python's TypeError, never a crash (the first template
// is what fuzz_jinja found: str.split's maxsplit given a str).
TEST(JinjaErrors, IntegerArgumentsOfAnotherTypeAreTypeErrors) {
  for (const char* source :
       {"{{ 'a,b'.split(7,')[::tor5jinja13TemplateErro') }}", "{{ 'a,b'.split(',', 'x') }}",
        "{{ 'a b'.rsplit(None, 1.5) }}", "{{ 'aa'.replace('a', 'b', 'c') }}",
        "{{ 'x'|center([]) }}", "{{ 1.5|round('a') }}", "{{ [1, 2]|batch('x') }}",
        "{{ '7'|int(0, 'ten') }}", "{{ 'x'|indent(1.5) }}"}) {
    const TemplateError e = RenderError(source);
    EXPECT_EQ(e.kind(), ErrorKind::kType) << source;
    EXPECT_NE(e.message().find("object cannot be interpreted as an integer"), std::string::npos)
        << source << ": " << e.message();
  }
  EXPECT_EQ(Render("{{ 'a,b,c'.split(',', 1) }}|{{ 'x'|indent(2, true) }}|{{ 2.567|round(1) }}"),
            "['a', 'b,c']|  x|2.6");
  EXPECT_EQ(RenderError("{{ 'a'.split(',', u) }}").kind(), ErrorKind::kUndefined);
}

// A slice inside a tuple subscript is a syntax error naming the line, not a null dereference
// (fuzz_jinja found `A[3.5, none, 1, :2.5]`).
TEST(JinjaErrors, SliceInsideATupleSubscriptIsRefused) {
  for (const char* source : {"{{ items[1, :2] }}", "x\n{{ items[:2, 1] }}",
                             "{{ {'k': items[3.5, none, 1, :2.5, none, true]}|tojson }}"}) {
    const TemplateError e = RenderError(source);
    EXPECT_NE(e.message().find("slice cannot be one item of a tuple subscript"), std::string::npos)
        << source << ": " << e.message();
  }
  EXPECT_EQ(RenderError("x\n{{ items[:2, 1] }}").line(), 2);
  EXPECT_EQ(Render("{{ items[1:] }}{{ items[:1] }}"), "[1, 2][3]");
}

TEST(JinjaErrors, BoundsOnLoopsRecursionAndOutput) {
  RenderOptions options;
  options.limits.max_loop_iterations = 1000;
  TemplateError e = RenderError(
      "{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", options);
  EXPECT_EQ(e.kind(), ErrorKind::kLimit);
  e = RenderError("{{ range(1000000)|length }}");
  EXPECT_EQ(e.kind(), ErrorKind::kLimit);
  EXPECT_EQ(e.message(),
            "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");

  options = {};
  options.limits.max_call_depth = 50;
  e = RenderError("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", options);
  EXPECT_EQ(e.kind(), ErrorKind::kLimit);
  EXPECT_EQ(Render("{% macro f(n) %}{% if n < 40 %}{{ f(n + 1) }}{% else %}{{ n }}{% endif %}"
                   "{% endmacro %}{{ f(0) }}",
                   options),
            "40");

  options = {};
  options.limits.max_output_bytes = 100;
  e = RenderError("{% for i in range(200) %}x{% endfor %}", options);
  EXPECT_EQ(e.kind(), ErrorKind::kLimit);
  e = RenderError("{{ 'x' * 1000 }}", options);
  EXPECT_EQ(e.kind(), ErrorKind::kLimit);
  EXPECT_EQ(Render("{% for i in range(100) %}x{% endfor %}", options), std::string(100, 'x'));
}

TEST(JinjaErrors, NestingIsBoundedNotAStackOverflow) {
  EXPECT_EQ(Render("{{ " + std::string(50, '(') + "1" + std::string(50, ')') + " }}"), "1");
  try {
    Template::Parse("{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}", "t");
    ADD_FAILURE() << "no error for 100000 nested parentheses";
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kSyntax);
    EXPECT_EQ(e.message(), "template nesting is deeper than 200 levels");
  }
  std::string deep_ifs;
  for (int i = 0; i < 5000; ++i) deep_ifs += "{% if true %}";
  EXPECT_THROW(Template::Parse(deep_ifs, "t"), TemplateError);
}

TEST(Jinja, SelfReferenceAndEscapingCallablesAreSafe) {
  // Python Jinja2: "Trueab". The cycler's bound next() outlives the cycler object.
  EXPECT_EQ(Render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me is defined }}"
                   "{% set n = cycler('a','b').next %}{{ n() }}{{ n() }}"),
            "Trueab");
  EXPECT_EQ(Render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"),
            "<Namespace {'me': <Namespace ...>}>");
}

TEST(Jinja, StrftimeNowUsesTheFixedClock) {
  RenderOptions options;
  options.fixed_now = std::tm{};
  options.fixed_now->tm_year = 2024 - 1900;
  options.fixed_now->tm_mon = 6;  // July
  options.fixed_now->tm_mday = 26;
  // Python: datetime(2024, 7, 26).strftime("%d %b %Y %A") == "26 Jul 2024 Friday"
  EXPECT_EQ(Render("{{ strftime_now('%d %b %Y %A') }}", options), "26 Jul 2024 Friday");
}

TEST(Jinja, ParsedOnceRenderedMany) {
  const Template t = Template::Parse("{% for x in items %}{{ x * k }},{% endfor %}", "t");
  Dict context = TestContext();
  context.Set("k", Value(2));
  EXPECT_EQ(t.Render(context), "6,2,4,");
  context.Set("k", Value(10));
  EXPECT_EQ(t.Render(context), "30,10,20,");
}

}  // namespace
}  // namespace proctor::jinja

namespace proctor::jinja {
namespace {

// #18 class 1: operator chains are parsed by loops, so their trees grew as deep as the chain was
// long; rendering or destroying one overflowed the stack. Each is now refused when parsed.
TEST(JinjaErrors, LongChainsAreRefusedWhenParsedNotAStackOverflow) {
  const auto repeat = [](const std::string& text, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += text;
    return s;
  };
  const auto chain = [&](const std::string& first, const std::string& link, int n) {
    return "{{ " + first + repeat(link, n) + " }}";
  };
  const std::string too_deep = "an expression nests deeper than 500 levels";
  const std::string too_nested = "template nesting is deeper than 200 levels";
  const struct {
    std::string source;
    const std::string& message;
  } cases[] = {
      {chain("1", "+1", 300000), too_deep},
      {chain("1", " and 1", 300000), too_deep},
      {chain("1", " ** 1", 300000), too_deep},
      {chain("1", "|string", 100000), too_deep},
      {chain("d", ".x", 100000), too_deep},
      {chain("d", "[0]", 100000), too_deep},
      {chain("d", "()", 100000), too_deep},
      {"{{ " + repeat("not ", 130000) + "1 }}", too_nested},
      {"{{ " + repeat("1 if 1 else ", 100000) + "1 }}", too_nested},
  };
  for (const auto& c : cases) {
    const auto start = std::chrono::steady_clock::now();
    const TemplateError e = RenderError(c.source);
    EXPECT_EQ(e.kind(), ErrorKind::kSyntax) << c.source.substr(0, 40);
    EXPECT_NE(e.message().find(c.message), std::string::npos)
        << c.source.substr(0, 40) << ": " << e.message();
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5);
  }
  // A chain under the bound parses and renders as before; `~` is one flat node at any length.
  EXPECT_EQ(Render(chain("1", "+1", 400)), "401");
  EXPECT_EQ(Render(chain("'a'", "~'a'", 300000)), std::string(300001, 'a'));
}

// #18 class 3: every string, list or dict a template builds is bounded in bytes, all of them
// together are bounded, and the render is bounded in time; each bound is a clear kLimit error
// raised before the memory is taken.
TEST(JinjaErrors, WhatATemplateBuildsIsBoundedInBytesAndTime) {
  const auto limit_error = [](const std::string& source, const RenderOptions& options,
                              const std::string& message) {
    const TemplateError e = RenderError(source, options);
    EXPECT_EQ(e.kind(), ErrorKind::kLimit) << source;
    EXPECT_NE(e.message().find(message), std::string::npos) << source << ": " << e.message();
  };
  const RenderOptions defaults;
  limit_error("{% set x = ' '|center(10**9) %}", defaults,
              "center's result would hold 1000000000 bytes, more than the 67108864");
  limit_error("{{ ' '|center(2**62) }}", defaults, "would hold 4611686018427387904 bytes");
  limit_error(
      "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}",
      defaults, "a string joined with ~ would hold 134217728 bytes");
  limit_error("{{ 'a\nb'|indent(10**15) }}", defaults, "indent's result would hold");
  limit_error("{{ [1]|batch(10**15, 'x') }}", defaults, "a batch would hold");
  limit_error("{{ [1] * 10**9 }}", defaults, "a repeated list would hold");
  limit_error("{{ ('a' * 1000000)|replace('a', 'b' * 100) }}", defaults, "replace's result");

  RenderOptions small;  // each remaining builder, against a 1000-byte bound on one value
  small.limits.max_value_bytes = 1000;
  const std::string x = "{% set x = 'y' * 400 %}{% set l = [x] %}";
  limit_error(x + "{{ [x, x]|join(x) }}", small, "join's result would hold");
  limit_error(x + "{{ x.join([x, x]) }}", small, "join's result would hold");
  limit_error(x + "{{ '{}{}{}'.format(x, x, x) }}", small, "format's result would hold");
  limit_error(x + "{{ '%s%s%s'|format(x, x, x) }}", small, "a %-formatted string would hold");
  limit_error(x + "{{ [l, l, l]|string }}", small, "the text of a list or dict would hold");
  limit_error(x + "{{ [l, l, l]|tojson }}", small, "tojson's text would hold");
  limit_error(x + "{{ x|list }}", small, "the list of a string's characters would hold");
  limit_error("{{ ('a ' * 100).split() }}", small, "split's list would hold");
  limit_error(x + "{{ x + x + x }}", small, "a string joined with + would hold");
  limit_error(x + "{{ [x, x, x] }}", small, "a list would hold");
  limit_error(x + "{{ {'a': x, 'b': x, 'c': x} }}", small, "a dict would hold");

  // Rebuilding a growing list 10^5 times is quadratic: 240 GB of copies in all, refused at the
  // bound on the bytes built (1 GiB), in well under a second.
  const auto start = std::chrono::steady_clock::now();
  limit_error(
      "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = ns.l + [i] %}"
      "{% endfor %}",
      defaults, "the template built more than 1073741824 bytes");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5);
  // Containers nest at most 512 deep (repr, tojson and destruction recurse per level).
  limit_error(
      "{% set ns = namespace(l=[]) %}{% for i in range(100000) %}{% set ns.l = [ns.l] %}"
      "{% endfor %}",
      defaults, "a list or dict would nest deeper than 512 levels");
  // Work that builds nothing is bounded by time.
  RenderOptions brief;
  brief.limits.max_render_seconds = 0.2;
  limit_error(
      "{% set x = 'a' * 10000000 %}{% for i in range(100000) %}{% set y = 'b' in x %}"
      "{% endfor %}",
      brief, "the template ran longer than 0.2 s");
  // Under the bounds, the same constructions render as before.
  EXPECT_EQ(Render("{% set ns = namespace(s='') %}{% for i in range(10000) %}"
                   "{% set ns.s = ns.s ~ 'abcdefghij' %}{% endfor %}{{ ns.s|length }}"),
            "100000");
  EXPECT_EQ(Render("{{ ' '|center(5) }}|{{ [[1]] * 2 }}|{{ 'ab'|list }}"),
            "     |[[1], [1]]|['a', 'b']");
}

}  // namespace
}  // namespace proctor::jinja
