# The TPE tuner's bridge to Optuna (Debian's python3-optuna): JSON lines on stdin and stdout.
#
# A session rebuilds the study from the campaign's history, so that the same ledger always gives
# the same draws:
#   {"op": "begin", "seed": S, "startup": 8, "space": {"name": [choice, ...], ...},
#    "history": [{"params": {...}, "value": number or null}, ...]}   -> {"ok": true}
#     (a null value is a trial still running: the constant liar stands in for it)
#   {"op": "ask"}                          -> {"params": {...}}
#   {"op": "tell", "value": number}        -> {"ok": true}   (the last asked trial)
# Errors answer {"error": "..."}; the bridge exits at the end of its input.
import json
import sys
import warnings

import optuna

optuna.logging.set_verbosity(optuna.logging.ERROR)
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def distributions(space):
    return {name: optuna.distributions.CategoricalDistribution(choices)
            for name, choices in space.items()}


def main():
    study = None
    dists = None
    last = None
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
            op = request.get("op")
            if op == "begin":
                sampler = optuna.samplers.TPESampler(
                    seed=int(request["seed"]), multivariate=True, constant_liar=True,
                    n_startup_trials=int(request.get("startup", 8)))
                study = optuna.create_study(direction="maximize", sampler=sampler)
                dists = distributions(request["space"])
                for past in request["history"]:
                    study.enqueue_trial(past["params"], skip_if_exists=False)
                    trial = study.ask(dists)
                    if past["value"] is not None:
                        study.tell(trial, float(past["value"]))
                last = None
                answer = {"ok": True}
            elif op == "ask":
                if study is None:
                    raise ValueError("ask before begin")
                last = study.ask(dists)
                answer = {"params": {name: last.params[name] for name in dists}}
            elif op == "tell":
                if last is None:
                    raise ValueError("tell before ask")
                study.tell(last, float(request["value"]))
                last = None
                answer = {"ok": True}
            else:
                raise ValueError("unknown op %r" % (op,))
        except Exception as error:  # one line back, never a traceback on the pipe
            answer = {"error": "%s: %s" % (type(error).__name__, error)}
        sys.stdout.write(json.dumps(answer, sort_keys=True) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
