// The Verilator side of litex_sim (replaces LiteX's core/veril.cpp): evaluation, command line, finish and,
// only in a model built with --trace (VM_TRACE), the VCD/FST tracer. LiteX 2024.12's own file opens a tracer
// and flushes it every 1000 ticks in every build, so its models carry the tracing code even when nothing
// is traced.
#include <cstdint>
#include "Vsim.h"
#include "verilated.h"

#if VM_TRACE
#if VM_TRACE_FST
#include "verilated_fst_c.h"
typedef VerilatedFstC Tracer;
static const char *trace_file = "sim.fst";
#else
#include "verilated_vcd_c.h"
typedef VerilatedVcdC Tracer;
static const char *trace_file = "sim.vcd";
#endif
static Tracer *tracer = nullptr;
static Vsim *traced = nullptr;
static uint64_t trace_from = 0, trace_to = UINT64_MAX;
#endif

static uint64_t now_ps = 0;

extern "C" void litex_sim_eval(void *vsim, uint64_t time_ps) {
    static_cast<Vsim *>(vsim)->eval();
    now_ps = time_ps;
}

extern "C" void litex_sim_init_cmdargs(int argc, char *argv[]) {
    Verilated::commandArgs(argc, argv);
}

extern "C" void litex_sim_init_tracer(void *vsim, long start, long end) {
#if VM_TRACE
    traced = static_cast<Vsim *>(vsim);
    trace_from = start;
    trace_to = end >= 0 ? (uint64_t)end : UINT64_MAX;
    Verilated::traceEverOn(true);
    tracer = new Tracer;
    traced->trace(tracer, 99);
    tracer->open(trace_file);
    tracer->set_time_unit("1ps");
    tracer->set_time_resolution("1ps");
#else
    (void)vsim; (void)start; (void)end;
#endif
}

extern "C" void litex_sim_tracer_dump() {
#if VM_TRACE
    // The SoC's sim_trace signal (LiteX SimPlatform) switches dumping on and off.
    if (tracer && traced->sim_trace && trace_from <= now_ps && now_ps <= trace_to)
        tracer->dump(now_ps);
#endif
}

extern "C" int litex_sim_got_finish() {
    int finished = Verilated::gotFinish();
#if VM_TRACE
    if (tracer) {
        tracer->flush();
        if (finished) tracer->close();
    }
#endif
    return finished;
}

#if VM_COVERAGE
extern "C" void litex_sim_coverage_dump() {
    VerilatedCov::write("sim.cov");
}
#endif

double sc_time_stamp() {
    return now_ps;
}
