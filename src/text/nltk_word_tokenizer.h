// nltk.word_tokenize (nltk 3.10): Punkt's sentences, each split by NLTKWordTokenizer (the improved
// Treebank tokenizer: quotes, punctuation, brackets, dashes and MacIntyre's contractions, by the
// same regular expressions in the same order). IFEval's capital_word_frequency counts its tokens.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace proctor::text {

class PunktSentenceTokenizer;

// NLTKWordTokenizer().tokenize(sentence).
std::vector<std::string> NltkTreebankTokenize(std::string_view sentence);

// word_tokenize(text): the tokens of every sentence `punkt` finds.
std::vector<std::string> NltkWordTokenize(std::string_view text,
                                          const PunktSentenceTokenizer& punkt);

}  // namespace proctor::text
