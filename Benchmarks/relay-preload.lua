-- wrk script that sends every body of a file once, then stops (the relay growth runs of
-- scripts/bench-relay.py fill a relay with it). Arguments after `--`:
--   <bodies file> <METHOD> <path> <wrk threads> <marker prefix>
-- Thread i sends bodies i, i+T, i+2T, … (T threads). A connection asking for a request after
-- its thread's last body gets GET /api/version instead (never a replayed body), paced at 100 ms;
-- two seconds later (every PUT still in flight has been answered) the thread writes the file
-- <marker prefix><i> at its next response and stops. wrk itself runs until its
-- duration ends, so the caller waits for every thread's marker and then sends SIGINT (wrk
-- stops and reports).
-- setup() (numbers the threads), init() (reads the bodies) and done() (the JSON summary) are
-- relay.lua's; request(), delay() and response() below replace or add to them.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "relay.lua")

local done_sending, done_at, marker, marked = false, nil, nil, false

local relay_init = init
function init(args)
    relay_init(args)  -- bodies, method, path, stride; its delay argument is our marker (not a number: 0)
    marker = args[5]
end

function request()
    if state.counter >= #state.bodies then
        if not done_sending then done_at = os.time() end
        done_sending = true
        return wrk.format("GET", "/api/version", {}, nil)
    end
    local body = state.bodies[state.counter + 1]
    state.counter = state.counter + state.stride
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
