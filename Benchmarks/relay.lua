-- wrk script for the relay load test. Arguments after `--`:
--   <bodies file> <METHOD> <path> <wrk threads> [delay ms] [first body]
-- Thread i sends bodies first+i, first+i+T, first+i+2T, … (T threads), so no body is sent twice
-- within a run; a caller running wrk again against the same relay passes a later `first`.
-- `delay` paces each connection (wrk measures latency from send to response, without it).
-- The bodies and the position in them are one global table, so relay-preload.lua can reuse init.
state = {bodies = {}, counter = 0, stride = 1, pause = 0}
local next_id, threads = 0, {}

function setup(thread)
    thread:set("thread_id", next_id)
    next_id = next_id + 1
    table.insert(threads, thread)
end

function init(args)
    for line in io.lines(args[1]) do state.bodies[#state.bodies + 1] = line end
    wrk.method = args[2]
    wrk.path = args[3]
    wrk.headers["Content-Type"] = "application/json"
    state.stride = tonumber(args[4]) or 1
    state.pause = math.floor((tonumber(args[5]) or 0) + 0.5)
    state.counter = (tonumber(args[6]) or 0) + thread_id
end

function request()
    local body = state.bodies[(state.counter % #state.bodies) + 1]
    state.counter = state.counter + state.stride
    return wrk.format(nil, nil, nil, body)
end

function delay()
    return state.pause
end

function done(summary, latency, requests)
    local e = summary.errors
    io.write(string.format(
        '{"requests":%d,"duration_us":%d,"non2xx":%d,"socket_errors":%d,"p50_us":%d,"p99_us":%d,"max_us":%d}\n',
        summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
        latency:percentile(50), latency:percentile(99), latency.max))
end
