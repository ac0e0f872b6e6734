"""The peers benchmark's own notes and questions, written apart from bench/data.py: a logistics company's
operations and product team (warehouses, drivers, cold chain, customs, the driver app) rather than a
software team's platform notes, with other templates and other words. Each question paraphrases one
note, which is its answer.
"""

from __future__ import annotations

import random

SITES = [
    "Rotterdam hub",
    "Leipzig depot",
    "Valencia cross-dock",
    "Gdansk port yard",
    "Lyon north warehouse",
    "Milan cold store",
    "Porto returns centre",
    "Antwerp bonded store",
    "Brno parcel sorter",
    "Seville fresh depot",
    "Hamburg airfreight shed",
    "Turin spare-parts store",
    "Bilbao fresh hub",
]
PEOPLE = [
    "Ingrid (night shift lead)",
    "Tomasz from customs desk",
    "Ana, the fleet planner",
    "the dock supervisor",
    "Yusuf in driver support",
    "Mireille from quality",
    "the duty transport manager",
    "Kofi, site safety",
]
# (topic, a fact about it with {site}, {person}, {n}; the question a colleague would ask about it)
TOPICS = [
    (
        "freezer alarms",
        "Freezer probes at the {site} report every {n} minutes; above minus fifteen degrees "
        "the shift calls {person} before moving any pallet.",
        "who do we phone when a freezer at the {site} gets too warm",
    ),
    (
        "customs holds",
        "Shipments held by customs at the {site} wait in bay {n}; {person} files the release "
        "paperwork and the truck may not leave before the stamp.",
        "where do customs-held shipments wait at the {site}",
    ),
    (
        "driver breaks",
        "Drivers leaving the {site} must take a {n}-minute rest before the motorway leg; "
        "{person} checks the tachograph export each Friday.",
        "how long is the mandatory driver rest out of the {site}",
    ),
    (
        "scanner batteries",
        "Handheld scanners at the {site} get fresh batteries every {n} hours; spares "
        "sit in the locker that {person} keeps the key of.",
        "how often are scanner batteries swapped at the {site}",
    ),
    (
        "damaged pallets",
        "A pallet that arrives crushed at the {site} is photographed from {n} sides and "
        "{person} decides within the hour whether the carrier pays.",
        "what is the procedure for a crushed pallet arriving at the {site}",
    ),
    (
        "route planning",
        "Routes out of the {site} are frozen {n} hours before departure; late orders go to "
        "the next wave unless {person} approves an extra van.",
        "when are delivery routes locked at the {site}",
    ),
    (
        "returns grading",
        "Returned parcels at the {site} are graded A to D within {n} days; grade D goes "
        "to recycling after {person} signs the list.",
        "how fast must returns be graded at the {site}",
    ),
    (
        "dangerous goods",
        "Lithium batteries at the {site} are stored in cage {n}, away from the chargers; "
        "{person} keeps the hazmat register up to date.",
        "where do we keep lithium batteries at the {site}",
    ),
    (
        "fuel cards",
        "Fuel cards for vans based at the {site} are capped at {n} litres a day; {person} lifts "
        "the cap for long-haul detours.",
        "what is the daily fuel card limit for vans at the {site}",
    ),
    (
        "forklift checks",
        "Every forklift at the {site} gets a pre-shift check of {n} points; a failed brake "
        "test is reported to {person} and the truck is tagged out.",
        "who is told when a forklift fails its morning brake test at the {site}",
    ),
    (
        "driver app crashes",
        "When the driver app freezes near the {site}, drivers restart it and sync again "
        "within {n} minutes; {person} collects the crash reports.",
        "what should a driver do if the app hangs around the {site}",
    ),
    (
        "dock appointments",
        "Inbound trucks book a dock slot at the {site} at least {n} hours ahead; a truck "
        "without one waits for {person} to find a gap.",
        "how early must a carrier book a dock slot at the {site}",
    ),
    (
        "temperature logs",
        "Chilled trailers leaving the {site} keep a temperature log every {n} minutes, "
        "which {person} archives for the food-safety audit.",
        "how often do chilled trailers record their temperature from the {site}",
    ),
    (
        "lost parcels",
        "A parcel missing at the {site} is searched for {n} days before the claim; "
        "{person} opens the claim with the insurer.",
        "how long do we search for a missing parcel at the {site} before claiming",
    ),
    (
        "night deliveries",
        "Night drops near the {site} are allowed only after {n} pm with the quiet tail "
        "lift; neighbours complain to {person}.",
        "from what time are night deliveries allowed around the {site}",
    ),
    (
        "pallet wrapping",
        "Outbound pallets at the {site} get {n} turns of stretch film, more for glass; "
        "{person} audits a sample every shift.",
        "how many turns of stretch film go on an outbound pallet at the {site}",
    ),
]
SUFFIXES = [
    "",
    " Agreed at the ops review.",
    " Written after the winter peak.",
    " Check the site wiki for photos.",
    " This replaced the old paper form.",
    " Same rule for subcontracted drivers.",
]


def notes(count: int, seed: int = 7) -> tuple[list[dict], list[tuple[str, int]]]:
    """``count`` notes (title, content, tags) and 200 questions, each with the index of its answer."""
    rng = random.Random(seed)
    combos = [(t, s) for t in range(len(TOPICS)) for s in range(len(SITES))]
    out: list[dict] = []
    for n in range(count):
        topic, site = combos[n % len(combos)]
        name, fact, _ = TOPICS[topic]
        person = PEOPLE[rng.randrange(len(PEOPLE))]
        number = rng.choice([2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 24, 30, 45, 48, 90]) + 100 * (n // len(combos))
        content = fact.format(site=SITES[site], person=person, n=number) + rng.choice(SUFFIXES)
        out.append(
            {
                "title": f"{name.capitalize()} at the {SITES[site]} (rev {n // len(combos) + 1})",
                "content": content,
                "tags": [name.split()[0], SITES[site].split()[0].lower()],
            }
        )
    # A question per note of the first revision of 200 (topic, site) pairs: its answer is that note.
    questions = [
        (TOPICS[topic][2].format(site=SITES[site]), index)
        for index, (topic, site) in enumerate(combos[: min(count, len(combos))])
    ]
    rng.shuffle(questions)
    return out, questions[:200]
