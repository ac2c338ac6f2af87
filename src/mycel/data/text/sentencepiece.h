// SentencePiece through the library itself (Debian's libsentencepiece-dev): training a model
// for text.SentencePieceVocab and the SentencePieceTokenizer transform that encodes with it.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace mycel::data::text {

/// Trains a model on `sentences` (or, when empty, on the text files `files`) with SentencePiece
/// trainer options (vocab_size, model_type, character_coverage, ...); returns the serialized
/// model. ValueError with the library's message when training fails.
std::string sentencepiece_train(const std::vector<std::string>& sentences,
                                const std::vector<std::string>& files,
                                const std::map<std::string, std::string>& options);

/// Checks that `model` is a loadable serialized model; ValueError with the library's message.
void sentencepiece_check(const std::string& model);

}  // namespace mycel::data::text
