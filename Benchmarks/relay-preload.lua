-- wrk script that sends every body of a file once, then stops (the relay growth runs of
-- scripts/bench-relay.py fill a relay with it). Arguments after `--`:
--   <bodies file> <METHOD> <path> <wrk threads> <marker prefix>
-- Thread i sends bodies i, i+T, i+2T, … (T threads). A connection asking for a request after
-- its thread's last body gets GET /api/version instead (never a replayed body), paced at 100 ms;
-- two seconds later (every PUT still in flight has been answered) the thread writes the file
-- <marker prefix><i> at its next response and stops. wrk itself runs until its
-- duration ends, so the caller waits for every thread's marker and then sends SIGINT (wrk
-- stops and reports).
-- setup() (numbers the threads) and done() (the JSON summary) are relay.lua's; everything
-- else is defined below and replaces relay.lua's.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "relay.lua")

local bodies, counter, stride, done_sending, done_at, marker, marked = {}, 0, 1, false, nil, nil, false

function init(args)
    for line in io.lines(args[1]) do bodies[#bodies + 1] = line end
    wrk.method = args[2]
    wrk.path = args[3]
    wrk.headers["Content-Type"] = "application/json"
    stride = tonumber(args[4]) or 1
    marker = args[5]
    counter = thread_id
end

function request()
    if counter >= #bodies then
        if not done_sending then done_at = os.time() end
        done_sending = true
        return wrk.format("GET", "/api/version", {}, nil)
    end
    local body = bodies[counter + 1]
    counter = counter + stride
    return wrk.format(nil, nil, nil, body)
end

function delay()
    if done_sending then return 100 end
    return 0
end

function response(status, headers, body)
    if done_sending and os.time() - done_at >= 2 then
        if not marked and marker then
            local file = io.open(marker .. thread_id, "w")
            if file then file:close() end
            marked = true
        end
        wrk.thread:stop()
    end
end
