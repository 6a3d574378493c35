#pragma once
/// \file
/// \brief Seconds since this process started (for "time from launch to first iteration").
namespace gmi::runtime {
double seconds_since_launch();
}
