# The wire form of attune's ledger events: one Envelope per event, one stream per campaign.
#
# Hash chain: hash = SHA-256(prevHash || canonical bytes of this Envelope with `hash` unset),
# where "canonical bytes" are Cap'n Proto's canonical encoding (capnp::canonicalize). The first
# event of a campaign has an all-zero prevHash. Evolution: fields are only ever added, with the
# next ordinal; nothing is renamed, renumbered or removed.
@0xdf453030bca63628;

$import "/capnp/c++.capnp".namespace("attune::wire");

enum RunPurpose { calibration @0; search @1; check @2; retry @3; }
enum ObjectiveClass { structural @0; sameMath @1; numeric @2; other @3; }
enum FailureClass { oom @0; hang @1; crash @2; infra @3; pruned @4; }
enum FailureCause {
  unknown @0; outOfMemory @1; gpuFault @2; nodeFailure @3; nonFiniteValue @4;
  illegalMemoryAccess @5; duplicateGpu @6; transportStart @7; network @8; storage @9;
  preemption @10; collectiveTimeout @11; timeLimit @12; noProgress @13; system @14;
}
enum RefusalReason {
  duplicate @0; multipleLevers @1; layer1 @2; budget @3; concurrency @4; invalid @5;
}
enum Account { tuner @0; infra @1; }
enum Verdict { newLeader @0; notBetter @1; failed @2; calibration @3; }
enum StopReason { budgetSpent @0; tunerStopped @1; operator @2; }
enum ChangeKind { flag @0; env @1; }

struct SettingChange {
  kind @0 :ChangeKind;
  name @1 :Text;
  beforePresent @2 :Bool;
  before @3 :Text;
  afterPresent @4 :Bool;
  after @5 :Text;
  objectiveClass @6 :ObjectiveClass;
}

struct Lever {
  name @0 :Text;
  objectiveClass @1 :ObjectiveClass;
}

struct Hypothesis {
  bottleneck @0 :Text;
  mechanism @1 :Text;
  expectedGainFraction @2 :Float64;
  bottleneckTag @3 :Text;  # the diagnosis tag (ep_a2a, tp_comm, ...) when the tuner names one
}

struct CampaignOpened {
  name @0 :Text;
  model @1 :Text;
  hardware @2 :Text;
  gpuCount @3 :UInt32;
  seqLength @4 :UInt32;
  globalBatch @5 :UInt32;
  precision @6 :Text;
  data @7 :Text;
  baselineRecipe @8 :Text;
  baselineRecipeHash @9 :Text;
  policyName @10 :Text;
  policyHash @11 :Text;
  budgetAuto @12 :Bool;
  budgetGpuHours @13 :Float64;
  reserveChecks @14 :UInt32;
  concurrency @15 :UInt32;
  stepsPerRun @16 :UInt32;
  windowFirstStep @17 :UInt32;
  windowLastStep @18 :UInt32;
  checkSteps @19 :UInt32;
  hangTimeoutMinutes @20 :UInt32;
  bandFloorFraction @21 :Float64;
  bandK @22 :Float64;
  calibrationRuns @23 :UInt32;
  tuner @24 :Text;
  seed @25 :UInt64;
  realitySeed @26 :UInt64;
  campaignFileHash @27 :Text;
  launcher @28 :Text;
  policyPath @29 :Text;  # the policy file a resumed campaign re-reads and re-hashes
  jobTemplate @30 :Text;  # the local launcher's command line, with placeholders
  expectedSecondsPerStep @31 :Float64;  # the local launcher's cost estimate
  learnedRules @32 :Text;  # the learned-rules catalog as read when the campaign opened (JSON lines)
  learnedRulesPath @33 :Text;  # where the campaign appends what it learns; empty: nowhere
  tunerOptions @34 :Text;  # the campaign file's [tuner] table (TOML), for the tuner to read
  tunerBlackBox @35 :Bool;  # the tuner draws whole configurations (exempt from rule 2)
  leverGroupsHash @36 :Text;  # hex SHA-256 of the lever groups decide() counted levers with
  usdPerGpuHour @37 :Float64;  # the campaign file's [cost] price of one GPU-hour; 0 = none
  simStack @38 :Text;  # the simulated cluster's stack profile (preset name or path); empty: default
}

struct CandidateProposed {
  proposalId @0 :UInt32;
  purpose @1 :RunPurpose;
  recipe @2 :Text;
  recipeHash @3 :Text;
  diff @4 :List(SettingChange);
  levers @5 :List(Lever);
  hypothesis @6 :Hypothesis;
  profile @7 :Bool;
  retryOfRunId @8 :UInt32;
  checkOfRunId @9 :UInt32;
  parentRunId @10 :UInt32;  # the run whose recipe the candidate changes (0 = the baseline)
}

struct LaunchRefused {
  proposalId @0 :UInt32;
  reason @1 :RefusalReason;
  detail @2 :Text;
}

struct LaunchAdmitted {
  proposalId @0 :UInt32;
  runId @1 :UInt32;
  purpose @2 :RunPurpose;
  gpus @3 :UInt32;
  steps @4 :UInt32;
  expectedGpuHours @5 :Float64;
  excludeNodes @6 :List(Text);
  jobName @7 :Text;
}

struct JobSubmitted {
  runId @0 :UInt32;
  launcherJobId @1 :Text;
  jobName @2 :Text;
  atUnixNs @3 :Int64;
}

struct JobStarted {
  runId @0 :UInt32;
  admittedAtUnixNs @1 :Int64;
  nodes @2 :List(Text);
}

struct JobFinished {
  runId @0 :UInt32;
  releasedAtUnixNs @1 :Int64;
  finalState @2 :Text;
  factsSource @3 :Text;
  logPath @4 :Text;
}

struct RunMeasured {
  runId @0 :UInt32;
  tokensPerSecPerGpu @1 :Float64;
  stepTimesMs @2 :List(Float64);
  windowRsd @3 :Float64;
  peakMemoryGibByStage @4 :List(Float64);
  lossCurve @5 :List(Float64);
  resolvedArgsHash @6 :Text;
}

struct RunFailed {
  runId @0 :UInt32;
  failureClass @1 :FailureClass;
  message @2 :Text;
  node @3 :Text;
  cause @4 :FailureCause;  # unknown in ledgers written before it
}

struct Charged {
  runId @0 :UInt32;
  account @1 :Account;
  gpus @2 :UInt32;
  admittedAtUnixNs @3 :Int64;
  releasedAtUnixNs @4 :Int64;
  gpuHours @5 :Float64;
}

struct BandSet {
  calibrationRunIds @0 :List(UInt32);
  meanTokensPerSecPerGpu @1 :Float64;
  rsd @2 :Float64;
  bandFraction @3 :Float64;
  budgetGpuHours @4 :Float64;
  meanLaunchGpuHours @5 :Float64;
}

struct VerdictRecorded {
  runId @0 :UInt32;
  verdict @1 :Verdict;
  gainFraction @2 :Float64;
  leaderBefore @3 :UInt32;
  leaderAfter @4 :UInt32;
  bandFraction @5 :Float64;
}

struct CommTime {
  kind @0 :Text;
  exposedMs @1 :Float64;
}

struct StageBreakdown {
  stage @0 :UInt32;
  stepMs @1 :Float64;
  computeMs @2 :Float64;
  exposedComm @3 :List(CommTime);
  hostBoundMs @4 :Float64;
  idleMs @5 :Float64;
}

struct ProfileAnalyzed {
  runId @0 :UInt32;
  stages @1 :List(StageBreakdown);
  slowestStage @2 :UInt32;
  largestCost @3 :Text;
  tracePaths @4 :List(Text);
}

struct StopRecorded {
  reason @0 :StopReason;
  leaderRunId @1 :UInt32;
  leversTested @2 :List(Text);
  lastDiagnosis @3 :Text;
  evidence @4 :Text;
}

struct ConvergenceCheck {
  name @0 :Text;
  measured @1 :Float64;
  threshold @2 :Float64;
  passed @3 :Bool;
}

struct ConvergenceChecked {
  candidateRunId @0 :UInt32;
  checkRunId @1 :UInt32;
  hasVerdict @2 :Bool;
  layer1Passed @3 :Bool;
  layer2Passed @4 :Bool;
  checks @5 :List(ConvergenceCheck);
  reason @6 :Text;
}

struct RecipeShipped {
  runId @0 :UInt32;
  isBaseline @1 :Bool;
  recipe @2 :Text;
  recipeHash @3 :Text;
  tokensPerSecPerGpu @4 :Float64;
  gainFraction @5 :Float64;
  evidence @6 :Text;
}

struct AccessDenied {
  object @0 :Text;
  rule @1 :Text;
}

struct LeverRuleLearned {
  lever @0 :Text;
  rule @1 :Text;
  evidenceRunIds @2 :List(UInt32);
  when @3 :Text;  # the diagnosis tag it was learned under
  effect @4 :Text;  # "helped" or "hurt"
  action @5 :Text;  # the change in words, when it is not a figure
}

# A tool call of an agent tuner (an LLM over HTTP, or an external agent over the control socket):
# what it asked, what it got, and for a framework-source read the location it read (rule 3).
struct ToolCalled {
  tool @0 :Text;
  input @1 :Text;  # the call's arguments as JSON
  result @2 :Text;  # what the tool answered (text or JSON; long answers are cut)
  allowed @3 :Bool;  # false: the call was outside the allowed set and was not run
  sourceLocation @4 :Text;  # framework source read: "path:first-last"; else empty
  turn @5 :UInt32;  # the tuner's turn counter
}

# One turn of an LLM tuner, charged to the LLM account beside the GPU-hours.
struct LlmCharged {
  turn @0 :UInt32;
  model @1 :Text;
  inputTokens @2 :UInt64;
  outputTokens @3 :UInt64;
  costUsd @4 :Float64;
}

struct Envelope {
  sequence @0 :UInt64;
  campaignId @1 :Text;
  recordedAtUnixNs @2 :Int64;
  actor @3 :Text;
  hashAlgorithm @4 :Text;  # "sha256"
  prevHash @5 :Data;
  hash @6 :Data;
  body :union {
    campaignOpened @7 :CampaignOpened;
    candidateProposed @8 :CandidateProposed;
    launchRefused @9 :LaunchRefused;
    launchAdmitted @10 :LaunchAdmitted;
    jobSubmitted @11 :JobSubmitted;
    jobStarted @12 :JobStarted;
    jobFinished @13 :JobFinished;
    runMeasured @14 :RunMeasured;
    runFailed @15 :RunFailed;
    charged @16 :Charged;
    bandSet @17 :BandSet;
    verdictRecorded @18 :VerdictRecorded;
    profileAnalyzed @19 :ProfileAnalyzed;
    stopRecorded @20 :StopRecorded;
    convergenceChecked @21 :ConvergenceChecked;
    recipeShipped @22 :RecipeShipped;
    accessDenied @23 :AccessDenied;
    leverRuleLearned @24 :LeverRuleLearned;
    toolCalled @25 :ToolCalled;
    llmCharged @26 :LlmCharged;
  }
}
