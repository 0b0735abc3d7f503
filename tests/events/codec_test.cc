#include "events/codec.h"

#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "events/event.h"
#include "events/event_json.h"
#include "events/sha256.h"

namespace attune {
namespace {

// ---- Samples: every field holds a value other than its default ----------------------------------

const std::string kUnicode = "Grüße, 日本語 \"quoted\" 🚀";

SettingChange sample_change() {
  return {ChangeKind::kEnv, "NCCL_ALGO", true, "Ring", true, "Tree", ObjectiveClass::kSameMath};
}

Hypothesis sample_hypothesis() {
  return {"exposed ep_a2a on stage 3", "overlap " + kUnicode, 0.07, "ep_a2a"};
}

std::vector<Body> sample_bodies() {
  return {
      CampaignOpened{"campaign " + kUnicode,
                     "deepseek-v3-proxy",
                     "h200-8x",
                     64,
                     8192,
                     512,
                     "fp8",
                     "/data/tokens.bin",
                     "--micro-batch-size 1\n--tensor-model-parallel-size 2",
                     "ab12",
                     "moe-policy",
                     "cd34",
                     true,
                     312.5,
                     4,
                     2,
                     15,
                     5,
                     14,
                     21,
                     45,
                     0.025,
                     2.5,
                     6,
                     "expert",
                     0xFFFFFFFFFFFFFFF0ULL,
                     17,
                     "ef56",
                     "slurm",
                     "policies/glm-4.5.toml",
                     "srun train.sh {recipe_file} > {log}",
                     2.5,
                     "{\"lever\":\"moe-dispatcher\"}\n",
                     "/home/ü/.local/share/attune/learned_rules.jsonl",
                     "name = \"llm\"\nmodel = \"m\"\n",
                     true,
                     "9a8b",
                     3.25,
                     "slime"},
      CandidateProposed{
          7,
          RunPurpose::kCheck,
          "--micro-batch-size 2",
          "0123abcd",
          {sample_change(),
           {ChangeKind::kFlag, "--overlap-grad-reduce", false, "", true, "",
            ObjectiveClass::kStructural}},
          {{"overlap", ObjectiveClass::kStructural}, {"nccl-algo", ObjectiveClass::kOther}},
          sample_hypothesis(),
          true,
          11,
          12,
          3},
      LaunchRefused{8, RefusalReason::kMultipleLevers, "touches 2 levers: " + kUnicode},
      LaunchAdmitted{
          9, 13, RunPurpose::kRetry, 16, 14, 2.75, {"node-a", "node-ü"}, "attune-c1-r13"},
      JobSubmitted{14, "123456", "attune-c1-r14", -5},
      JobStarted{15, 1'700'000'000'000'000'001, {"gpu-001", "gpu-002", "gpu-003"}},
      JobFinished{16, 1'700'000'000'000'000'002, "OUT_OF_MEMORY", "sacct", "/logs/ü/r16.log"},
      RunMeasured{17,
                  4321.5,
                  {1000.25, 998.5, -0.0, 1e-300},
                  0.012,
                  {61.5, 70.25},
                  {11.2, 10.9, 10.5},
                  "99aa"},
      RunFailed{18, FailureClass::kOom, "CUDA out of memory, tried " + kUnicode, "gpu-007",
                FailureCause::kOutOfMemory},
      Charged{19, Account::kInfra, 8, 1'000, 3'601'000, 8.0},
      BandSet{{1, 2, 3, 4, 5}, 4000.5, 0.011, 0.033, 300.0, 1.25},
      VerdictRecorded{20, Verdict::kNewLeader, 0.051, 3, 20, 0.034},
      ProfileAnalyzed{21,
                      {{0, 1000.5, 700.25, {{"tp", 12.5}, {"ep_a2a", 80.75}}, 5.5, 1.5},
                       {3, 1100.5, 720.25, {{"pp_p2p", 30.0}}, 6.5, 2.5}},
                      3,
                      "ep_a2a on stage 3",
                      {"/traces/rank0.json", "/traces/rank3 ü.json"}},
      StopRecorded{StopReason::kTunerStopped, 20, {"overlap", "nccl-algo"}, "host bound", kUnicode},
      ConvergenceChecked{20,
                         22,
                         true,
                         true,
                         true,
                         {{"final_loss", 0.001, 0.02, true}, {"max_step_diff", 0.5, 0.1, false}},
                         "layer 2 failed: " + kUnicode},
      RecipeShipped{20, false, "--micro-batch-size 2", "0123abcd", 4500.25, 0.051, kUnicode},
      AccessDenied{"/etc/shadow", "outside the campaign folder"},
      LeverRuleLearned{"overlap",
                       "helps when dp comm is exposed",
                       {3, 20, 4'000'000'000U},
                       "dp_exposed",
                       "helped",
                       "--overlap-grad-reduce set " + kUnicode},
      ToolCalled{"read_framework_source", R"({"path":"megatron/core/x.py"})", kUnicode, false,
                 "megatron/core/x.py:10-80", 7},
      LlmCharged{7, "claude-x", 12'345'678'901ULL, 512, 0.125},
  };
}

Digest digest_counting_from(std::uint8_t first) {
  Digest digest{};
  for (std::size_t i = 0; i < digest.size(); ++i) digest[i] = static_cast<std::uint8_t>(first + i);
  return digest;
}

Envelope envelope_with(Body body) {
  Envelope envelope;
  envelope.sequence = 42;
  envelope.campaign_id = "camp-ü-7";
  envelope.recorded_at_unix_ns = 1'700'000'000'123'456'789;
  envelope.actor = "tuner:expert";
  envelope.prev_hash = digest_counting_from(1);
  envelope.hash = digest_counting_from(101);
  envelope.body = std::move(body);
  return envelope;
}

Envelope launch_refused_envelope() {
  return envelope_with(LaunchRefused{8, RefusalReason::kBudget, "over budget"});
}

// ---- Byte surgery on canonical messages ---------------------------------------------------------
// Canonical Cap'n Proto: word 0 is the root struct pointer, the root struct follows it, and every
// object is laid out in pre-order. These helpers edit such a message in place so that a test can
// make exactly one thing wrong while the message stays canonical.

class Words {
 public:
  explicit Words(std::string bytes) : bytes_(std::move(bytes)) {}

  std::uint64_t get(std::size_t index) const {
    std::uint64_t word = 0;
    std::memcpy(&word, bytes_.data() + index * 8, 8);
    return word;
  }
  void set(std::size_t index, std::uint64_t word) {
    std::memcpy(bytes_.data() + index * 8, &word, 8);
  }

  // The word a struct or list pointer at `index` points to.
  std::size_t target(std::size_t index) const {
    const auto offset = static_cast<std::int32_t>(static_cast<std::uint32_t>(get(index))) >> 2;
    return static_cast<std::size_t>(static_cast<std::int64_t>(index) + 1 + offset);
  }
  // Index of pointer `slot` of the struct whose pointer is at `struct_pointer`.
  std::size_t pointer_slot(std::size_t struct_pointer, std::size_t slot) const {
    const std::size_t data_words = (get(struct_pointer) >> 32) & 0xffff;
    return target(struct_pointer) + data_words + slot;
  }
  char* bytes_at(std::size_t index) { return bytes_.data() + index * 8; }
  void erase_words(std::size_t index, std::size_t count) { bytes_.erase(index * 8, count * 8); }
  void add_to_offset(std::size_t index, std::int32_t delta_words) {
    const std::uint64_t word = get(index);
    const auto offset = static_cast<std::int32_t>(static_cast<std::uint32_t>(word)) >> 2;
    const auto low = static_cast<std::uint32_t>((offset + delta_words) << 2) | (word & 3);
    set(index, (word & 0xffffffff00000000ULL) | low);
  }
  void set_byte_list_count(std::size_t index, std::uint32_t count) {
    set(index, (get(index) & ((std::uint64_t{1} << 35) - 1)) | (std::uint64_t{count} << 35));
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

// Pointer slots and data offsets of wire::Envelope (see events.capnp and its generated header).
constexpr std::size_t kRootPointer = 0;
constexpr std::size_t kHashAlgorithmSlot = 2;
constexpr std::size_t kPrevHashSlot = 3;
constexpr std::size_t kHashSlot = 4;
constexpr std::size_t kBodySlot = 5;
constexpr std::size_t kBodyDiscriminantByte = 16;    // UInt16 element 8 of the data section
constexpr std::size_t kLaunchRefusedReasonByte = 4;  // UInt16 element 2 of the data section

void set_u16(char* at, std::uint16_t value) { std::memcpy(at, &value, sizeof(value)); }

// Shrinks the 32-byte Data at pointer slot `slot` of the envelope to 16 bytes, keeping the message
// canonical: the pointers that point past the removed words move back by two words.
std::string with_short_digest(const std::string& bytes, std::size_t slot) {
  Words words(bytes);
  const std::size_t pointer = words.pointer_slot(kRootPointer, slot);
  const std::size_t content = words.target(pointer);
  for (std::size_t later = slot + 1; later <= kBodySlot; ++later) {
    const std::size_t other = words.pointer_slot(kRootPointer, later);
    if (words.get(other) != 0) words.add_to_offset(other, -2);
  }
  words.set_byte_list_count(pointer, 16);
  words.erase_words(content + 2, 2);
  return words.bytes();
}

// ---- Round trip ---------------------------------------------------------------------------------

TEST(Codec, SamplesCoverEveryBodyTypeWithNonDefaultValues) {
  std::set<std::size_t> indices;
  for (const Body& body : sample_bodies()) {
    indices.insert(body.index());
    std::visit(
        [&](const auto& value) {
          EXPECT_FALSE(value == std::decay_t<decltype(value)>{}) << body_name(body);
        },
        body);
  }
  EXPECT_EQ(indices.size(), std::variant_size_v<Body>);
}

TEST(Codec, EveryBodyRoundTrips) {
  for (const Body& body : sample_bodies()) {
    const Envelope envelope = envelope_with(body);
    const std::string bytes = encode_envelope(envelope, true);
    EXPECT_EQ(bytes.size() % 8, 0U);
    Result<Envelope> decoded = decode_envelope(bytes);
    ASSERT_TRUE(decoded.ok()) << body_name(body) << ": " << decoded.error();
    EXPECT_EQ(*decoded, envelope) << body_name(body);
    EXPECT_EQ(encode_envelope(*decoded, true), bytes) << body_name(body);
  }
}

TEST(Codec, DefaultEnvelopeRoundTrips) {
  const Envelope envelope;
  Result<Envelope> decoded = decode_envelope(encode_envelope(envelope, true));
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(*decoded, envelope);
}

TEST(Codec, TextWithEmbeddedNulRoundTrips) {
  const Envelope envelope =
      envelope_with(AccessDenied{std::string("a\0b", 3), std::string("\0", 1)});
  Result<Envelope> decoded = decode_envelope(encode_envelope(envelope, true));
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(*decoded, envelope);
}

TEST(Codec, EncodingIsDeterministic) {
  for (const Body& body : sample_bodies()) {
    const Envelope envelope = envelope_with(body);
    const Envelope copy = envelope;
    EXPECT_EQ(encode_envelope(envelope, true), encode_envelope(copy, true));
    EXPECT_EQ(encode_envelope(envelope, false), encode_envelope(copy, false));
  }
}

TEST(Codec, DistinctBodiesEncodeDistinctly) {
  std::set<std::string> encodings;
  for (const Body& body : sample_bodies())
    encodings.insert(encode_envelope(envelope_with(body), true));
  EXPECT_EQ(encodings.size(), std::variant_size_v<Body>);
}

TEST(Codec, EncodingWithoutHashDiffersOnlyByTheHash) {
  for (const Body& body : sample_bodies()) {
    const Envelope envelope = envelope_with(body);
    Envelope other_hash = envelope;
    other_hash.hash = digest_counting_from(200);

    const std::string with_hash = encode_envelope(envelope, true);
    const std::string without_hash = encode_envelope(envelope, false);
    EXPECT_NE(with_hash, without_hash);
    EXPECT_NE(encode_envelope(other_hash, true), with_hash);
    EXPECT_EQ(encode_envelope(other_hash, false), without_hash);
    // The hash's 32 bytes are the only content that is missing.
    EXPECT_EQ(with_hash.size(), without_hash.size() + 32);
    const std::string hash_bytes(envelope.hash.begin(), envelope.hash.end());
    EXPECT_NE(with_hash.find(hash_bytes), std::string::npos);
    EXPECT_EQ(without_hash.find(hash_bytes), std::string::npos);
  }
}

// ---- Chain hash ---------------------------------------------------------------------------------

TEST(ChainHash, IsSha256OfPrevHashThenBytesWithoutHash) {
  const Envelope envelope = envelope_with(sample_bodies()[1]);
  const std::string prev(envelope.prev_hash.begin(), envelope.prev_hash.end());
  EXPECT_EQ(chain_hash(envelope, nullptr), sha256(prev + encode_envelope(envelope, false)));
}

TEST(ChainHash, IgnoresTheHashField) {
  Envelope envelope = envelope_with(sample_bodies()[0]);
  const Digest before = chain_hash(envelope, nullptr);
  envelope.hash = Digest{};
  EXPECT_EQ(chain_hash(envelope, nullptr), before);
}

TEST(ChainHash, ChangesWhenAnySingleFieldChanges) {
  using Mutation = std::pair<const char*, std::function<void(Envelope&)>>;
  auto candidate = [](Envelope& e) -> CandidateProposed& {
    return std::get<CandidateProposed>(e.body);
  };
  auto profile = [](Envelope& e) -> ProfileAnalyzed& { return std::get<ProfileAnalyzed>(e.body); };
  auto measured = [](Envelope& e) -> RunMeasured& { return std::get<RunMeasured>(e.body); };
  const std::vector<std::pair<Body, std::vector<Mutation>>> cases = {
      {sample_bodies()[1],
       {
           {"sequence", [](Envelope& e) { e.sequence += 1; }},
           {"campaign_id", [](Envelope& e) { e.campaign_id += "x"; }},
           {"recorded_at_unix_ns", [](Envelope& e) { e.recorded_at_unix_ns -= 1; }},
           {"actor", [](Envelope& e) { e.actor = "operator"; }},
           {"prev_hash", [](Envelope& e) { e.prev_hash[31] ^= 1; }},
           {"body type", [](Envelope& e) { e.body = LaunchRefused{}; }},
           {"proposal_id", [&](Envelope& e) { candidate(e).proposal_id += 1; }},
           {"purpose", [&](Envelope& e) { candidate(e).purpose = RunPurpose::kSearch; }},
           {"recipe", [&](Envelope& e) { candidate(e).recipe += " "; }},
           {"recipe_hash", [&](Envelope& e) { candidate(e).recipe_hash = "0123abce"; }},
           {"diff removed", [&](Envelope& e) { candidate(e).diff.pop_back(); }},
           {"diff kind", [&](Envelope& e) { candidate(e).diff[1].kind = ChangeKind::kEnv; }},
           {"diff name", [&](Envelope& e) { candidate(e).diff[0].name = "NCCL_PROTO"; }},
           {"diff before_present",
            [&](Envelope& e) { candidate(e).diff[0].before_present = false; }},
           {"diff before", [&](Envelope& e) { candidate(e).diff[0].before = "Tree"; }},
           {"diff after_present", [&](Envelope& e) { candidate(e).diff[1].after_present = false; }},
           {"diff after", [&](Envelope& e) { candidate(e).diff[0].after = "Ring"; }},
           {"diff objective_class",
            [&](Envelope& e) { candidate(e).diff[0].objective_class = ObjectiveClass::kNumeric; }},
           {"levers order",
            [&](Envelope& e) { std::swap(candidate(e).levers[0], candidate(e).levers[1]); }},
           {"lever name", [&](Envelope& e) { candidate(e).levers[1].name = "nccl"; }},
           {"lever objective_class",
            [&](Envelope& e) {
              candidate(e).levers[0].objective_class = ObjectiveClass::kSameMath;
            }},
           {"bottleneck", [&](Envelope& e) { candidate(e).hypothesis.bottleneck.clear(); }},
           {"mechanism", [&](Envelope& e) { candidate(e).hypothesis.mechanism += "."; }},
           {"expected_gain_fraction",
            [&](Envelope& e) { candidate(e).hypothesis.expected_gain_fraction = 0.0700001; }},
           {"profile", [&](Envelope& e) { candidate(e).profile = false; }},
           {"retry_of_run_id", [&](Envelope& e) { candidate(e).retry_of_run_id = 0; }},
           {"check_of_run_id", [&](Envelope& e) { candidate(e).check_of_run_id = 11; }},
           {"parent_run_id", [&](Envelope& e) { candidate(e).parent_run_id = 5; }},
       }},
      {sample_bodies()[12],
       {
           {"run_id", [&](Envelope& e) { profile(e).run_id = 22; }},
           {"stage", [&](Envelope& e) { profile(e).stages[1].stage = 2; }},
           {"step_ms", [&](Envelope& e) { profile(e).stages[0].step_ms = 1000.0; }},
           {"compute_ms", [&](Envelope& e) { profile(e).stages[0].compute_ms = 0.0; }},
           {"comm kind", [&](Envelope& e) { profile(e).stages[0].exposed_comm[1].kind = "dp"; }},
           {"comm exposed_ms",
            [&](Envelope& e) { profile(e).stages[1].exposed_comm[0].exposed_ms = -30.0; }},
           {"host_bound_ms", [&](Envelope& e) { profile(e).stages[1].host_bound_ms = 6.25; }},
           {"idle_ms", [&](Envelope& e) { profile(e).stages[0].idle_ms = 1.0; }},
           {"slowest_stage", [&](Envelope& e) { profile(e).slowest_stage = 0; }},
           {"largest_cost", [&](Envelope& e) { profile(e).largest_cost = "tp on stage 0"; }},
           {"trace_paths", [&](Envelope& e) { profile(e).trace_paths.push_back(""); }},
       }},
      {sample_bodies()[7],
       {
           {"tokens_per_sec_per_gpu",
            [&](Envelope& e) { measured(e).tokens_per_sec_per_gpu = 4321.25; }},
           {"step_times_ms", [&](Envelope& e) { measured(e).step_times_ms[3] = 2e-300; }},
           {"window_rsd", [&](Envelope& e) { measured(e).window_rsd = 0.0; }},
           {"peak_memory", [&](Envelope& e) { measured(e).peak_memory_gib_by_stage[1] = 70.0; }},
           {"loss_curve", [&](Envelope& e) { measured(e).loss_curve.pop_back(); }},
           {"resolved_args_hash", [&](Envelope& e) { measured(e).resolved_args_hash = "99ab"; }},
       }},
  };
  for (const auto& [body, mutations] : cases) {
    const Envelope base = envelope_with(body);
    const Digest base_hash = chain_hash(base, nullptr);
    for (const auto& [name, mutate] : mutations) {
      Envelope changed = base;
      mutate(changed);
      ASSERT_NE(changed, base) << name;
      EXPECT_NE(chain_hash(changed, nullptr), base_hash) << name;
    }
  }
}

// ---- Corrupt input ------------------------------------------------------------------------------

TEST(Decode, RejectsEveryTruncation) {
  for (const Body& body : sample_bodies()) {
    const std::string bytes = encode_envelope(envelope_with(body), true);
    for (std::size_t size = 0; size < bytes.size(); ++size) {
      EXPECT_FALSE(decode_envelope(std::string_view(bytes).substr(0, size)).ok())
          << body_name(body) << " truncated to " << size;
    }
  }
}

TEST(Decode, RejectsByteCountsThatAreNotWholeWords) {
  const std::string bytes = encode_envelope(launch_refused_envelope(), true);
  for (std::size_t extra : {1, 3, 7}) {
    Result<Envelope> decoded = decode_envelope(bytes + std::string(extra, '\0'));
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.error().find("multiple of 8"), std::string::npos) << decoded.error();
  }
}

// Trailing words do not change what an event says: the reader takes them, and the chain's check
// of canonical bytes rejects them (ChainTamper.DetectsTrailingWordsAfterAnyEvent).
TEST(Decode, ReadsPastTrailingWordsToTheSameEvent) {
  const std::string bytes = encode_envelope(launch_refused_envelope(), true);
  auto decoded = decode_envelope(bytes + std::string(8, '\0'));
  ASSERT_TRUE(decoded.ok()) << decoded.error();
  EXPECT_EQ(decoded.value(), launch_refused_envelope());
}

TEST(Decode, RejectsRandomGarbage) {
  std::mt19937_64 random(20240611);
  constexpr int kTrials = 2000;
  constexpr std::size_t kWordsMax = 64;
  for (int trial = 0; trial < kTrials; ++trial) {
    const std::size_t size = 8 * (1 + random() % kWordsMax);
    std::string bytes(size, '\0');
    for (char& byte : bytes) byte = static_cast<char>(random());
    EXPECT_FALSE(decode_envelope(bytes).ok()) << "trial " << trial;
  }
}

TEST(Decode, SurvivesEverySingleByteCorruption) {
  // Either outcome is allowed for each corruption (a flipped bit in a number is still a valid
  // event); what matters is an answer instead of a crash.
  int decoded_count = 0;
  int rejected_count = 0;
  for (const Body& body : sample_bodies()) {
    const std::string bytes = encode_envelope(envelope_with(body), true);
    for (std::size_t i = 0; i < bytes.size(); ++i) {
      for (unsigned char flip : {0x01, 0x80, 0xff}) {
        std::string corrupt = bytes;
        corrupt[i] = static_cast<char>(corrupt[i] ^ flip);
        ++(decode_envelope(corrupt).ok() ? decoded_count : rejected_count);
      }
    }
  }
  EXPECT_GT(decoded_count, 0);
  EXPECT_GT(rejected_count, 0);
}

TEST(Decode, RejectsEncodingWithoutHash) {
  Result<Envelope> decoded = decode_envelope(encode_envelope(launch_refused_envelope(), false));
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().find("hash: 0 bytes"), std::string::npos) << decoded.error();
}

TEST(Decode, RejectsShortHash) {
  const std::string bytes = encode_envelope(launch_refused_envelope(), true);
  Result<Envelope> decoded = decode_envelope(with_short_digest(bytes, kHashSlot));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.error(), "decode_envelope: hash: 16 bytes, expected 32");
}

TEST(Decode, RejectsShortPrevHash) {
  const std::string bytes = encode_envelope(launch_refused_envelope(), true);
  Result<Envelope> decoded = decode_envelope(with_short_digest(bytes, kPrevHashSlot));
  ASSERT_FALSE(decoded.ok());
  EXPECT_EQ(decoded.error(), "decode_envelope: prev_hash: 16 bytes, expected 32");
}

TEST(Decode, RejectsOtherHashAlgorithm) {
  Words words(encode_envelope(launch_refused_envelope(), true));
  char* text = words.bytes_at(words.target(words.pointer_slot(kRootPointer, kHashAlgorithmSlot)));
  ASSERT_EQ(std::string(text, 6), "sha256");
  std::memcpy(text, "sha512", 6);
  Result<Envelope> decoded = decode_envelope(words.bytes());
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().find("sha512"), std::string::npos) << decoded.error();
}

TEST(Decode, RejectsUnknownBodyMember) {
  for (std::uint16_t member : {std::uint16_t{20}, std::uint16_t{65535}}) {
    Words words(encode_envelope(launch_refused_envelope(), true));
    set_u16(words.bytes_at(words.target(kRootPointer)) + kBodyDiscriminantByte, member);
    Result<Envelope> decoded = decode_envelope(words.bytes());
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.error().find("unknown union member " + std::to_string(member)),
              std::string::npos)
        << decoded.error();
  }
}

TEST(Decode, RejectsEnumValueOutOfRange) {
  Words words(encode_envelope(launch_refused_envelope(), true));
  char* data = words.bytes_at(words.target(words.pointer_slot(kRootPointer, kBodySlot)));
  set_u16(data + kLaunchRefusedReasonByte,
          2);  // a known value first: the surgery is right
  Result<Envelope> known = decode_envelope(words.bytes());
  ASSERT_TRUE(known.ok()) << known.error();
  EXPECT_EQ(std::get<LaunchRefused>(known->body).reason, RefusalReason::kLayer1);

  set_u16(data + kLaunchRefusedReasonByte, 6);
  Result<Envelope> decoded = decode_envelope(words.bytes());
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.error().find("LaunchRefused.reason: unknown enum value 6"), std::string::npos)
      << decoded.error();
}

// ---- JSON and CSV -------------------------------------------------------------------------------

TEST(EventJson, HasEnvelopeKeysAndBodyFields) {
  const Envelope envelope = envelope_with(sample_bodies()[1]);
  const nlohmann::json json = event_to_json(envelope);
  EXPECT_EQ(json.size(), 8U);
  EXPECT_EQ(json.at("sequence"), 42);
  EXPECT_EQ(json.at("campaign_id"), "camp-ü-7");
  EXPECT_EQ(json.at("recorded_at_unix_ns"), 1'700'000'000'123'456'789);
  EXPECT_EQ(json.at("actor"), "tuner:expert");
  EXPECT_EQ(json.at("prev_hash"),
            "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20");
  EXPECT_EQ(json.at("hash"), to_hex(envelope.hash));
  EXPECT_EQ(json.at("type"), "CandidateProposed");

  const nlohmann::json& body = json.at("body");
  EXPECT_EQ(body.size(), 11U);
  EXPECT_EQ(body.at("proposal_id"), 7);
  EXPECT_EQ(body.at("parent_run_id"), 3);
  EXPECT_EQ(body.at("purpose"), "check");
  EXPECT_EQ(body.at("recipe_hash"), "0123abcd");
  EXPECT_EQ(body.at("profile"), true);
  EXPECT_EQ(body.at("retry_of_run_id"), 11);
  EXPECT_EQ(body.at("check_of_run_id"), 12);
  ASSERT_EQ(body.at("diff").size(), 2U);
  EXPECT_EQ(body.at("diff")[0], (nlohmann::json{{"kind", "env"},
                                                {"name", "NCCL_ALGO"},
                                                {"before_present", true},
                                                {"before", "Ring"},
                                                {"after_present", true},
                                                {"after", "Tree"},
                                                {"objective_class", "same-math"}}));
  EXPECT_EQ(body.at("levers")[1],
            (nlohmann::json{{"name", "nccl-algo"}, {"objective_class", "other"}}));
  EXPECT_EQ(body.at("hypothesis").at("expected_gain_fraction"), 0.07);
  EXPECT_EQ(body.at("hypothesis").at("mechanism"), "overlap " + kUnicode);
}

TEST(EventJson, RendersRunIdListsAsNumbersAndDoublesExactly) {
  const nlohmann::json band = event_to_json(envelope_with(sample_bodies()[10]));
  EXPECT_EQ(band.at("type"), "BandSet");
  EXPECT_EQ(band.at("body").at("calibration_run_ids"), (nlohmann::json{1, 2, 3, 4, 5}));
  EXPECT_EQ(band.at("body").at("band_fraction").dump(), "0.033");

  const nlohmann::json measured = event_to_json(envelope_with(sample_bodies()[7]));
  EXPECT_EQ(measured.at("body").at("step_times_ms").dump(), "[1000.25,998.5,-0.0,1e-300]");

  const nlohmann::json lesson = event_to_json(envelope_with(sample_bodies()[17]));
  EXPECT_EQ(lesson.at("body").at("evidence_run_ids"), (nlohmann::json{3, 20, 4'000'000'000U}));
}

TEST(EventJson, EveryBodyTypeRendersItsName) {
  for (const Body& body : sample_bodies()) {
    const nlohmann::json json = event_to_json(envelope_with(body));
    EXPECT_EQ(json.at("type"), body_name(body));
    EXPECT_TRUE(json.at("body").is_object());
    EXPECT_FALSE(json.at("body").empty());
  }
}

TEST(EventCsv, HeaderNamesTheColumns) {
  EXPECT_STREQ(event_csv_header(),
               "sequence,campaign_id,recorded_at_unix_ns,"
               "actor,type,prev_hash,hash,body");
}

TEST(EventCsv, QuotesTheBodyAndFieldsWithSeparators) {
  Envelope envelope = envelope_with(AccessDenied{"rm -rf \"/\", now", "no"});
  envelope.actor = "agent, \"claude\"";
  envelope.prev_hash = Digest{};
  envelope.hash = Digest{};
  const std::string zeros(64, '0');
  EXPECT_EQ(event_to_csv_row(envelope),
            R"(42,camp-ü-7,1700000000123456789,"agent, ""claude""",AccessDenied,)" + zeros + "," +
                zeros + R"csv(,"{""object"":""rm -rf \""/\"", now"",""rule"":""no""}")csv");
}

TEST(EventCsv, ReplacesBytesThatAreNotUtf8) {
  const Envelope envelope = envelope_with(AccessDenied{"bad \xff byte", "rule"});
  const std::string row = event_to_csv_row(envelope);
  EXPECT_NE(row.find("bad \xEF\xBF\xBD byte"), std::string::npos) << row;
}

// ---- Properties ---------------------------------------------------------------------------------

rc::Gen<Digest> gen_digest() { return rc::gen::arbitrary<Digest>(); }

rc::Gen<ObjectiveClass> gen_objective_class() {
  return rc::gen::element(ObjectiveClass::kStructural, ObjectiveClass::kSameMath,
                          ObjectiveClass::kNumeric, ObjectiveClass::kOther);
}

rc::Gen<SettingChange> gen_setting_change() {
  return rc::gen::build<SettingChange>(
      rc::gen::set(&SettingChange::kind, rc::gen::element(ChangeKind::kFlag, ChangeKind::kEnv)),
      rc::gen::set(&SettingChange::name), rc::gen::set(&SettingChange::before_present),
      rc::gen::set(&SettingChange::before), rc::gen::set(&SettingChange::after_present),
      rc::gen::set(&SettingChange::after),
      rc::gen::set(&SettingChange::objective_class, gen_objective_class()));
}

rc::Gen<CandidateProposed> gen_candidate_proposed() {
  return rc::gen::build<CandidateProposed>(
      rc::gen::set(&CandidateProposed::proposal_id),
      rc::gen::set(&CandidateProposed::purpose,
                   rc::gen::element(RunPurpose::kCalibration, RunPurpose::kSearch,
                                    RunPurpose::kCheck, RunPurpose::kRetry)),
      rc::gen::set(&CandidateProposed::recipe), rc::gen::set(&CandidateProposed::recipe_hash),
      rc::gen::set(&CandidateProposed::diff,
                   rc::gen::container<std::vector<SettingChange>>(gen_setting_change())),
      rc::gen::set(&CandidateProposed::levers,
                   rc::gen::container<std::vector<Lever>>(rc::gen::build<Lever>(
                       rc::gen::set(&Lever::name),
                       rc::gen::set(&Lever::objective_class, gen_objective_class())))),
      rc::gen::set(&CandidateProposed::hypothesis,
                   rc::gen::build<Hypothesis>(rc::gen::set(&Hypothesis::bottleneck),
                                              rc::gen::set(&Hypothesis::mechanism),
                                              rc::gen::set(&Hypothesis::expected_gain_fraction))),
      rc::gen::set(&CandidateProposed::profile), rc::gen::set(&CandidateProposed::retry_of_run_id),
      rc::gen::set(&CandidateProposed::check_of_run_id),
      rc::gen::set(&CandidateProposed::parent_run_id));
}

rc::Gen<RunMeasured> gen_run_measured() {
  return rc::gen::build<RunMeasured>(
      rc::gen::set(&RunMeasured::run_id), rc::gen::set(&RunMeasured::tokens_per_sec_per_gpu),
      rc::gen::set(&RunMeasured::step_times_ms), rc::gen::set(&RunMeasured::window_rsd),
      rc::gen::set(&RunMeasured::peak_memory_gib_by_stage), rc::gen::set(&RunMeasured::loss_curve),
      rc::gen::set(&RunMeasured::resolved_args_hash));
}

Envelope gen_envelope(Body body) {
  Envelope envelope;
  envelope.sequence = *rc::gen::arbitrary<std::uint64_t>();
  envelope.campaign_id = *rc::gen::arbitrary<std::string>();
  envelope.recorded_at_unix_ns = *rc::gen::arbitrary<std::int64_t>();
  envelope.actor = *rc::gen::arbitrary<std::string>();
  envelope.prev_hash = *gen_digest();
  envelope.hash = *gen_digest();
  envelope.body = std::move(body);
  return envelope;
}

void check_round_trip(const Envelope& envelope) {
  const std::string bytes = encode_envelope(envelope, true);
  Result<Envelope> decoded = decode_envelope(bytes);
  RC_ASSERT(decoded.ok());
  RC_ASSERT(*decoded == envelope);
  RC_ASSERT(encode_envelope(*decoded, true) == bytes);
}

RC_GTEST_PROP(CodecProperty, RunMeasuredRoundTrips, ()) {
  check_round_trip(gen_envelope(*gen_run_measured()));
}

RC_GTEST_PROP(CodecProperty, CandidateProposedRoundTrips, ()) {
  check_round_trip(gen_envelope(*gen_candidate_proposed()));
}

RC_GTEST_PROP(CodecProperty, DifferentRunMeasuredHashDifferently, ()) {
  const Envelope a = gen_envelope(*gen_run_measured());
  Envelope b = a;
  b.body = *gen_run_measured();
  RC_PRE(b != a);
  RC_ASSERT(chain_hash(a, nullptr) != chain_hash(b, nullptr));
}

}  // namespace
}  // namespace attune
