#!/usr/bin/env python3
"""Test data: responses to IFEval's prompts built to land on both sides of every verifier.

For each prompt of input_data.jsonl (every one, or every STEP-th), several responses are made
from a seeded random generator: a base text (English prose with abbreviations, initials, numbers,
quotes and ellipses, or prose in another language, or a mix), then for each instruction of the
prompt a change that follows it or nearly does (a keyword once too few, a bullet list one item
off, a postscript spelled "p. s.", a JSON block with a trailing comma, ...), and the wrappers the
loose score strips (a first "Sure!" line, a last line, markdown asterisks). Standard library
only; the same seed gives the same file.

usage: ifeval_cases.py INPUT_DATA_JSONL [--per-prompt K] [--step S] [--seed N]
prints a JSON list of {"key", "prompt", "instruction_id_list", "kwargs", "response"}.
"""
import json
import random
import sys

ENGLISH = [
    "Dr. Smith met Mr. Jones at 3.5 p.m. on Jan. 4th in Washington, D.C. and they talked.",
    "The U.S. economy grew by 2.1% last year, e.g. in farming and mining.",
    "J. R. R. Tolkien wrote many books... Some were long!",
    "\"Is this right?\" she asked. \"Yes,\" he said.",
    "(The first part ended here.) The second part began at noon.",
    "Prices rose sharply -- nobody expected it. Then they fell.",
    "It was a bright cold day in April, and the clocks were striking thirteen.",
    "We can't go, but they'll come tomorrow; you're welcome to join.",
    "The results were clear: 42 of 50 tests passed, i.e. 84 percent.",
    "Water boils at 100 degrees. Ice melts at 0 degrees.",
    "She bought apples, pears and plums at the market on St. Mark's Square.",
    "Why not? Because the answer was obvious! Everyone knew it.",
    "Section headings help readers; bullet points help too.",
    "NASA and the ESA launched a joint mission in 2019.",
    "His name was John F. Kennedy Jr. and he lived in N.Y. for years.",
    "The ‘quick’ fox said “hello” to the dog… and left.",
    "An ellipsis . . . can also be spaced out. Like this.",
    "No. 5 was the best result; no. 6 was the worst.",
    "gonna wanna gotta — the informal forms are common in speech.",
    "It's 'quoted' text, and ''double single quotes'' too.",
]
OTHER = {
    "de": "Das ist ein kurzer Text auf Deutsch. Wir gehen heute in die Stadt und kaufen Brot.",
    "it": "Questo è un breve testo in italiano. Oggi andiamo al mercato a comprare il pane.",
    "pt": "Este é um texto curto em português. Hoje vamos ao mercado comprar pão e leite.",
    "fi": "Tämä on lyhyt suomenkielinen teksti. Menemme tänään kauppaan ostamaan leipää.",
    "sw": "Hii ni maandishi mafupi kwa Kiswahili. Leo tunakwenda sokoni kununua mkate.",
    "vi": "Đây là một đoạn văn ngắn bằng tiếng Việt. Hôm nay chúng tôi đi chợ mua bánh mì.",
    "ru": "Это короткий текст на русском языке. Сегодня мы идём в магазин за хлебом.",
    "bg": "Това е кратък текст на български език. Днес отиваме на пазара за хляб.",
    "ko": "이것은 한국어로 된 짧은 글입니다. 오늘 우리는 시장에 가서 빵을 삽니다.",
    "hi": "यह हिंदी में एक छोटा सा पाठ है। आज हम बाज़ार जाकर रोटी खरीदेंगे।",
    "mr": "हा मराठीतील एक छोटा मजकूर आहे. आज आम्ही बाजारात जाऊन भाकरी घेणार आहोत.",
    "ne": "यो नेपालीमा लेखिएको छोटो पाठ हो। आज हामी बजार गएर रोटी किन्छौं।",
    "ar": "هذا نص قصير باللغة العربية. اليوم نذهب إلى السوق لشراء الخبز.",
    "fa": "این یک متن کوتاه به زبان فارسی است. امروز به بازار می‌رویم و نان می‌خریم.",
    "ur": "یہ اردو میں ایک مختصر تحریر ہے۔ آج ہم بازار جا کر روٹی خریدیں گے۔",
    "th": "นี่คือข้อความสั้นๆ ภาษาไทย วันนี้เราจะไปตลาดเพื่อซื้อขนมปัง",
    "bn": "এটি বাংলায় একটি ছোট লেখা। আজ আমরা বাজারে গিয়ে রুটি কিনব।",
    "gu": "આ ગુજરાતીમાં એક નાનો લેખ છે. આજે અમે બજારમાં જઈને રોટલી ખરીદીશું.",
    "kn": "ಇದು ಕನ್ನಡದಲ್ಲಿ ಒಂದು ಚಿಕ್ಕ ಬರಹ. ಇಂದು ನಾವು ಮಾರುಕಟ್ಟೆಗೆ ಹೋಗಿ ರೊಟ್ಟಿ ಕೊಳ್ಳುತ್ತೇವೆ.",
    "pa": "ਇਹ ਪੰਜਾਬੀ ਵਿੱਚ ਇੱਕ ਛੋਟੀ ਲਿਖਤ ਹੈ। ਅੱਜ ਅਸੀਂ ਬਾਜ਼ਾਰ ਜਾ ਕੇ ਰੋਟੀ ਖਰੀਦਾਂਗੇ।",
    "ta": "இது தமிழில் ஒரு சிறிய உரை. இன்று நாங்கள் சந்தைக்குச் சென்று ரொட்டி வாங்குவோம்.",
    "te": "ఇది తెలుగులో ఒక చిన్న వచనం. ఈ రోజు మేము మార్కెట్‌కు వెళ్లి రొట్టె కొంటాము.",
    "zh": "这是一段简短的中文文字。今天我们去市场买面包。",
    "ja": "これは日本語の短い文章です。今日はパンを買いにスーパーへ行きます。",
}
SENTINELS = ["Sure! Here is my answer:", "Of course.", "**Answer**", "Here you go"]


def english(rng, n):
    return " ".join(rng.choice(ENGLISH) for _ in range(n))


def near(rng, value):
    """A count at, just below or just above a threshold (never negative)."""
    return max(0, value + rng.choice([-1, 0, 0, 1]))


def apply(rng, text, instruction, kwargs, prompt):
    """Changes `text` towards following (or nearly following) one instruction."""
    kind = instruction.split(":")[1]
    follow = rng.random() < 0.6
    if kind == "existence":
        for word in kwargs["keywords"]:
            if rng.random() < 0.7:
                text += " " + rng.choice([word, word.upper(), word.capitalize()]) + "."
    elif kind == "frequency":
        text += "".join(f" {kwargs['keyword']}," for _ in range(near(rng, kwargs["frequency"])))
    elif kind == "forbidden_words":
        for word in kwargs["forbidden_words"]:
            if not follow:
                text += " " + rng.choice([word, word + "s", "un" + word, word.title()]) + "."
    elif kind == "letter_frequency":
        text += " " + kwargs["letter"] * near(rng, kwargs["let_frequency"] // 2)
    elif kind == "response_language":
        text = OTHER.get(kwargs["language"], text) if follow else rng.choice(list(OTHER.values()))
        if rng.random() < 0.2:
            text += " " + english(rng, 1)
    elif kind == "number_sentences":
        text = english(rng, near(rng, kwargs["num_sentences"]) // 2 + 1)
    elif kind == "number_paragraphs":
        n = near(rng, kwargs["num_paragraphs"])
        parts = [english(rng, 1) for _ in range(max(n, 1))]
        sep = rng.choice(["\n***\n", " *** ", "\n\n***\n\n", "***"])
        text = sep.join(parts)
        if rng.random() < 0.2:
            text = "***\n" + text + "\n***"
        if rng.random() < 0.1:
            text = text.replace(sep, sep + "   " + sep, 1)
    elif kind == "number_words":
        target = near(rng, kwargs["num_words"] // 10) * 10
        words = english(rng, 40).split()
        while len(words) < target:
            words += english(rng, 10).split()
        text = " ".join(words[:target + rng.choice([-3, 0, 2])])
    elif kind == "nth_paragraph_first_word":
        n = near(rng, kwargs["num_paragraphs"])
        parts = [english(rng, 1) for _ in range(max(n, 1))]
        nth = kwargs["nth_paragraph"]
        if nth <= len(parts) and follow:
            word = rng.choice([kwargs["first_word"], kwargs["first_word"].title(),
                               '"' + kwargs["first_word"] + ',"', "'" + kwargs["first_word"] + "."])
            parts[nth - 1] = word + " " + parts[nth - 1]
        text = "\n\n".join(parts)
        if rng.random() < 0.2:
            text = "\n\n" + text + "\n\n\n"
    elif kind == "number_placeholders":
        text += "".join(f" [{rng.choice(['name', 'address', 'x y'])}]"
                        for _ in range(near(rng, kwargs["num_placeholders"])))
    elif kind == "postscript":
        marker = rng.choice([kwargs["postscript_marker"], "P.S.", "P.P.S", "p. s.", "PS", "P.P.S."])
        if follow:
            text += "\n\n" + marker + " " + english(rng, 1)
    elif kind == "number_bullet_lists":
        n = near(rng, kwargs["num_bullets"])
        bullets = [rng.choice(["* ", "- ", "  * ", "*", "** "]) + english(rng, 1) for _ in range(n)]
        text += "\n" + "\n".join(bullets)
    elif kind == "constrained_response":
        if follow:
            text = rng.choice(["My answer is yes.", "My answer is no.", "My answer is maybe.",
                               "my answer is yes."]) + " " + text
    elif kind == "number_highlighted_sections":
        for _ in range(near(rng, kwargs["num_highlights"])):
            text += " " + rng.choice(["*important*", "**bold part**", "* *", "**", "*a\nb*"])
    elif kind == "multiple_sections":
        n = near(rng, kwargs["num_sections"])
        splitter = rng.choice([kwargs["section_spliter"], kwargs["section_spliter"].upper()])
        text = "\n".join(f"{splitter} {i + 1}\n{english(rng, 1)}" for i in range(n))
    elif kind == "json_format":
        payload = json.dumps({"answer": text[:60], "n": 3})
        text = rng.choice([payload, "```json\n" + payload + "\n```", "```JSON " + payload + "```",
                           payload[:-1] + ",}", "```\n" + payload + "\n``` trailing",
                           '{"a": NaN}', "[1, 2, 3]"])
    elif kind == "title":
        if follow:
            text = rng.choice(["<<A Good Title>>", "<< >>", "<<title\nbroken>>", "<<x>>"]) + "\n" + text
    elif kind == "two_responses":
        first, second = english(rng, 1), english(rng, 1)
        text = rng.choice([f"{first}\n******\n{second}", f"{first}******{first}",
                           f"******\n{first}\n******\n{second}\n******",
                           f"{first}\n******\n\n******\n{second}", f"{first} ***** {second}"])
    elif kind == "repeat_prompt":
        if follow:
            text = rng.choice([kwargs["prompt_to_repeat"], kwargs["prompt_to_repeat"].upper(),
                               "  " + kwargs["prompt_to_repeat"][:-1]]) + "\n" + text
    elif kind == "end_checker":
        if follow:
            text += " " + rng.choice([kwargs["end_phrase"], '"' + kwargs["end_phrase"] + '"',
                                      kwargs["end_phrase"].lower() + "\n", kwargs["end_phrase"][:-1]])
    elif kind == "capital_word_frequency":
        words = text.split()
        for _ in range(near(rng, kwargs["capital_frequency"])):
            i = rng.randrange(len(words))
            words[i] = words[i].upper()
        text = " ".join(words)
    elif kind == "english_capital":
        if follow:
            text = text.upper()
    elif kind == "english_lowercase":
        if follow:
            text = text.lower()
    elif kind == "no_comma":
        if follow:
            text = text.replace(",", "")
    elif kind == "quotation":
        if follow:
            text = rng.choice(['"' + text + '"', '"' + text, ' "' + text + '"\n'])
    else:
        raise SystemExit(f"unknown instruction {instruction}")
    return text


def main():
    path = sys.argv[1]
    args = sys.argv[2:]
    per_prompt = int(args[args.index("--per-prompt") + 1]) if "--per-prompt" in args else 4
    step = int(args[args.index("--step") + 1]) if "--step" in args else 1
    seed = int(args[args.index("--seed") + 1]) if "--seed" in args else 0
    rng = random.Random(seed)
    with open(path, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    cases = []
    for row in rows[::step]:
        for _ in range(per_prompt):
            base = rng.random()
            if base < 0.7:
                text = english(rng, rng.randint(1, 6))
            elif base < 0.9:
                text = rng.choice(list(OTHER.values()))
            else:
                text = english(rng, 2) + " " + rng.choice(list(OTHER.values()))
            for instruction, kwargs in zip(row["instruction_id_list"], row["kwargs"]):
                text = apply(rng, text, instruction, kwargs, row["prompt"])
            wrap = rng.random()
            if wrap < 0.15:
                text = rng.choice(SENTINELS) + "\n" + text
            elif wrap < 0.25:
                text = text + "\nI hope this helps!"
            elif wrap < 0.3:
                text = "**" + text + "**"
            elif wrap < 0.33:
                text = "   \n  "
            cases.append({"key": row["key"], "prompt": row["prompt"],
                          "instruction_id_list": row["instruction_id_list"],
                          "kwargs": row["kwargs"], "response": text})
    json.dump(cases, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
