-- wrk script for the relay load test. Arguments after `--`:
--   <bodies file> <METHOD> <path> <wrk threads> [delay ms] [first body]
-- Thread i sends bodies first+i, first+i+T, first+i+2T, … (T threads), so no body is sent twice
-- within a run; a caller running wrk again against the same relay passes a later `first`.
-- `delay` paces each connection (wrk measures latency from send to response, without it).
-- A line that does not start with `{` is a whole request (the mailbox runs), tab-separated:
-- METHOD, path, X-Coords-Key, X-Coords-Timestamp, X-Coords-Signature, body (empty fields left out).
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

-- The request for one line of the bodies file.
function state.format(line)
    if line:sub(1, 1) == "{" then return wrk.format(nil, nil, nil, line) end
    local method, path, key, timestamp, signature, body = line:match("^([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t([^\t]*)\t(.*)$")
    local headers = {["Content-Type"] = "application/json"}  -- wrk.format adds only Host to a table given
    if key ~= "" then
        headers["X-Coords-Key"], headers["X-Coords-Timestamp"], headers["X-Coords-Signature"] = key, timestamp, signature
    end
    return wrk.format(method, path, headers, body ~= "" and body or nil)
end

-- wrk calls request() once on thread 0 before the run, to check the script
-- (script_verify_request): that call must not use up a body (nor start a clock).
local checked = false
function state.verifying()
    if checked then return false end
    checked = true
    return thread_id == 0
end

function request()
    if state.verifying() then return wrk.format("GET", "/api/version", {}, nil) end
    local body = state.bodies[(state.counter % #state.bodies) + 1]
    state.counter = state.counter + state.stride
    return state.format(body)
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
