#include "tools/attune/campaign_figures.h"

#include "adapters/model/flops.h"
#include "adapters/model/presets.h"
#include "tools/attune/cli.h"

namespace attune::cli {

Result<LoadedCampaign> load_campaign(const std::string& db,
                                     const std::optional<std::string>& campaign) {
  auto store = open_ledger_read_only(db);
  if (!store.ok()) return make_error(store.error());
  auto picked = pick_campaign(**store, campaign);
  if (!picked.ok()) return make_error(picked.error());
  return LoadedCampaign{std::move(store).value(), picked.value()};
}

Result<CampaignView> fold_campaign(const EventStore& store, const std::string& campaign_id) {
  CampaignView view = initial_view();
  Status status =
      store.for_each(campaign_id, [&](Envelope&& event) { evolve(view, std::move(event)); });
  if (!status.ok()) return make_error(status.error());
  return view;
}

Efficiency efficiency_of(const CampaignOpened& opened) {
  Efficiency efficiency;
  efficiency.usd_per_gpu_hour = opened.usd_per_gpu_hour;
  if (auto model = sim::load_model(opened.model); model.ok() && opened.seq_length > 0) {
    // The model's own FLOPs: the vocabulary padded for one tensor-parallel rank, whatever the
    // run's TP, so that one token costs the same in every run of the campaign.
    efficiency.model_flops_per_token =
        sim::mfu_flops_per_token(model.value(), static_cast<int>(opened.seq_length), 1);
  }
  if (auto gpu = sim::load_hardware(opened.hardware); gpu.ok()) {
    efficiency.peak_tflops_per_gpu =
        opened.precision == "fp8" ? gpu->fp8_dense_tflops : gpu->bf16_dense_tflops;
  }
  return efficiency;
}

}  // namespace attune::cli
