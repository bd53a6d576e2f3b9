-- wrk script that sends every body (or request line) of a file once, then stops (the relay growth
-- runs of scripts/bench-relay.py fill a relay with it and time the mailbox requests). Arguments
-- after `--`:
--   <bodies file> <METHOD> <path> <wrk threads> <marker prefix>
-- Thread i sends bodies i, i+T, i+2T, … (T threads). A connection asking for a request after
-- its thread's last body gets GET /api/version instead (never a replayed body), paced at 100 ms.
-- Once every one of its bodies has been answered, the thread writes the file <marker prefix><i>
-- holding "<first request> <last answer> <bodies> complete" (Unix seconds with nanoseconds, from
-- `date`, read twice per thread) and stops; "incomplete" instead when answers were lost. wrk
-- itself runs until its duration ends, so the caller waits for every thread's marker, sends
-- SIGINT (wrk stops and reports) and takes the rate from the markers: wrk's own duration would
-- include the wait.
-- setup() (numbers the threads), init() (reads the bodies) and done() (the JSON summary) are
-- relay.lua's; request(), delay() and response() below replace or add to them.
dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "./") .. "relay.lua")

local marker, started, expected = nil, nil, 0
local answered, marked, sent_all_at = 0, false, nil

local function now()
    local clock = io.popen("date +%s.%N")
    local text = clock:read("*l")
    clock:close()
    return text
end

local relay_init = init
function init(args)
    relay_init(args)  -- bodies, method, path, stride; its delay argument is our marker (not a number: 0)
    marker = args[5]
    if state.counter < #state.bodies then
        expected = math.floor((#state.bodies - 1 - state.counter) / state.stride) + 1
    end
end

-- Writes the marker and stops the thread.
local function finish(outcome)
    marked = true
    if marker then
        local file = io.open(marker .. thread_id, "w")
        if file then
            file:write(string.format("%s %s %d %s\n", started or now(), now(), expected, outcome))
            file:close()
        end
    end
    wrk.thread:stop()
end

function request()
    if state.verifying() then return wrk.format("GET", "/api/version", {}, nil) end
    if started == nil then started = now() end
    if expected == 0 and not marked then finish("complete") end
    if state.counter >= #state.bodies then
        sent_all_at = sent_all_at or os.time()
        return wrk.format("GET", "/api/version", {}, nil)
    end
    local body = state.bodies[state.counter + 1]
    state.counter = state.counter + state.stride
    return state.format(body)
end

function delay()
    if state.counter >= #state.bodies then return 100 end
    return 0
end

-- Counts the answers to bodies (a filler's answer is the relay's version document); once there
-- are as many as the thread sent bodies, every body has been answered.
function response(status, headers, body)
    if not (body and body:find('"name":"coords"', 1, true)) then answered = answered + 1 end
    if not marked and answered >= expected then finish("complete") end
    -- A request lost to a failed connection is never answered: give up ten seconds after the
    -- last body went out, and say so (the caller refuses the run).
    if not marked and sent_all_at and os.time() - sent_all_at >= 10 then finish("incomplete") end
end
