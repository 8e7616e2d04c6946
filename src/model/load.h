// Finding and loading a model: MODEL may be a directory (config.json + *.safetensors, single file
// or shards with model.safetensors.index.json), a .gguf file, or a Hugging Face repo id
// ("org/name") already in the local Hugging Face cache. Nothing is downloaded.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "formats/model_config.h"
#include "formats/weights.h"

namespace proctor {

class GgufFile;  // formats/gguf.h

enum class ModelFormat { kSafetensors, kGguf };

struct LocatedModel {
  ModelFormat format = ModelFormat::kSafetensors;
  std::filesystem::path path;  // the directory (safetensors) or the .gguf file
};

// Resolves a model spec without loading it. Error when it is neither a path nor a cached HF id;
// for an id the message lists every cache folder it looked in.
LocatedModel LocateModel(std::string_view model_spec);

// The Hugging Face hub cache folders searched, in order: $HF_HUB_CACHE, $HF_HOME/hub,
// $XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub (unset variables skipped).
std::vector<std::filesystem::path> HuggingFaceCacheDirs();

struct LoadedModel {
  std::string spec;              // what the user passed
  std::filesystem::path source;  // directory or .gguf file actually read
  ModelFormat format = ModelFormat::kSafetensors;
  ModelConfig config;
  WeightStore weights;                   // owns the mmaps
  std::shared_ptr<const GgufFile> gguf;  // GGUF only: metadata (tokenizer.ggml.*), else null
};

// Locates, maps and validates a model: the config is parsed, every tensor the architecture needs
// is present with the expected shape (MLX-quantized linear layers with their packed shapes,
// scales and biases; model/mlx_weights.h).
LoadedModel LoadModel(std::string_view model_spec);

// The bytes a load maps: the .gguf file, or the directory's .safetensors files.
uint64_t ModelFileBytes(const LocatedModel& located);

// Called by LoadModel before it maps a model's files, with the spec and ModelFileBytes (the CLI
// prints "loading MODEL (N GB)..." for large ones). Set once at startup.
using LoadNotice = std::function<void(const std::string& spec, uint64_t bytes)>;
void SetLoadNotice(LoadNotice notice);

// The checks LoadModel applies to the weights, for stores built another way (synthetic models).
void ValidateWeights(const ModelConfig& config, const WeightStore& weights);

// mlx-lm's layout of a mixture of experts: every expert of a layer stacked in one tensor,
// <moe>.switch_mlp.{gate_proj,up_proj,down_proj}.{weight,scales,biases} ([experts, ...], as its
// models' sanitize() writes them). Each becomes one view per expert under the family's names
// (<moe>.experts.E.<gate|up|down name>.*), expert e's bytes being the e-th contiguous slice, so
// the loader sees the per-expert tensors of a Hugging Face checkpoint. A per-module quantization
// override of <moe>.switch_mlp.<name> (mlx-lm's mixed recipes write one for every module) becomes
// each expert's.
void SplitSwitchMlp(ModelConfig& config, WeightStore& weights);

// mlx-lm's conversion of a hybrid (Qwen3.5, Qwen3-Next: its models' sanitize()) stores the
// DeltaNet's conv taps as [channels, taps, 1] and adds 1 to every norm but the DeltaNet's gated
// one; Hugging Face checkpoints (and proctor's MLX output) keep [channels, 1, taps]. The first
// DeltaNet layer's taps tell them apart: for mlx-lm's, the config gets
// LinearAttentionConfig::Storage::kMlxLm and norm_adds_one false.
void ReadMlxLmHybridLayout(const WeightStore& weights, ModelConfig& config);

}  // namespace proctor
