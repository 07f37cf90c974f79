// A policy that knows the engine's replay loop: tools/check_layers must refuse it.
#pragma once

#include "sim/policy.hpp"
#include "sim/tenant_replay.hpp"
