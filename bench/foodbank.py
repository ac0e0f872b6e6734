"""A second, independent note set for the search benchmark: a regional food bank's team memory.

Written apart from bench/data.py (templated engineering notes) and in another domain, so that no figure
rests on one set of texts. Each question is phrased in other words than the note that answers it, and
names that note's key: the benchmark reports how often the answer is the first hit and in the top 10.
"""

from __future__ import annotations

NOTES: dict[str, tuple[str, str]] = {
    "cold-chain": (
        "Cold chain for donated dairy",
        "Milk, yoghurt and cheese from the supermarket pick-ups go straight into walk-in cooler B. Log "
        "the probe temperature on the clipboard by the door; anything that arrived above 7 degrees is "
        "composted, not shelved.",
    ),
    "cooler-alarm": (
        "Walk-in cooler alarm",
        "If cooler B beeps at night the alarm company phones Marta first, then Idris. The compressor "
        "reset switch is behind the left panel; after two resets in a week call Northside Refrigeration.",
    ),
    "forklift": (
        "Forklift certification",
        "Only volunteers with a current forklift card may move pallets in bay 3. Cards expire after three "
        "years; the refresher course is on the first Saturday of March and September.",
    ),
    "pallet-jack": (
        "Hand pallet jacks",
        "The two manual pallet jacks live next to the loading dock. The red one leaks hydraulic oil: "
        "use it only for empty pallets until the repair shop has seen it.",
    ),
    "volunteer-signup": (
        "Volunteer shift sign-up",
        "New volunteers book shifts through the online calendar; groups larger than eight email the "
        "volunteer coordinator two weeks ahead so we can plan tasks and parking.",
    ),
    "minors": (
        "Volunteers under sixteen",
        "Young people aged 12 to 15 may sort tins and pack boxes with a parent or teacher present, but "
        "never work in the freezer, on the dock or near the baler.",
    ),
    "baler": (
        "Cardboard baler safety",
        "The baler is locked with a key kept in the office. Two trained staff must be present; nobody "
        "reaches into the chamber without pressing the emergency stop and removing the key.",
    ),
    "truck-route": (
        "Tuesday rural delivery route",
        "The Tuesday van leaves at 7:30 and serves the five village pantries in the valley, north to "
        "south. Hillcrest church is closed in August, so skip it and phone their coordinator.",
    ),
    "van-fuel": (
        "Fuel card for the vans",
        "Each van has its own fuel card in the glovebox. Keep the receipt, write the odometer reading on "
        "it and drop it in the finance tray; the PIN is in the driver's handbook, not on the card.",
    ),
    "van-breakdown": (
        "Van breakdown on a route",
        "If a van breaks down, call the roadside assistance number on the key fob, then the warehouse "
        "so another driver can take the chilled boxes before they warm up.",
    ),
    "allergens": (
        "Allergen labelling of repacked food",
        "When we split bulk rice, oats or nuts into family bags, every bag gets a printed label listing "
        "the allergens from the original sack. Nut products are repacked on Fridays only, on table 4.",
    ),
    "expiry": (
        "Best-before versus use-by dates",
        "Food past its best-before date may still be given out for up to three months if the packaging "
        "is intact; anything past a use-by date goes to the animal feed partner or compost.",
    ),
    "recall": (
        "Manufacturer product recalls",
        "The food safety lead checks the agency's recall list every Monday. Recalled lots are pulled "
        "from shelves, bagged in red and kept in the quarantine cage until the supplier collects them.",
    ),
    "intake-form": (
        "Client intake form",
        "First-time clients fill in the one-page intake form: household size, postcode and dietary "
        "needs. We do not ask for proof of income; a referral from a social worker is welcome, not needed.",
    ),
    "referrals": (
        "Referral partners",
        "Schools, GP surgeries and the housing office can refer families with a voucher. Vouchers are "
        "valid for three visits within six months.",
    ),
    "privacy": (
        "Keeping client records private",
        "Client names and addresses stay in the locked cabinet and in the database, never on "
        "whiteboards or in group chats. Records are deleted two years after the last visit.",
    ),
    "halal": (
        "Halal and kosher parcels",
        "Keep a shelf of halal-certified and kosher-certified tins separate from the general stock, and "
        "mark the client's card so the packer builds the right parcel.",
    ),
    "baby": (
        "Baby formula and nappies",
        "Formula is never repacked or given past its date. Ask the age of the baby to pick the stage; "
        "nappies are stored by size on the top shelf of aisle 2.",
    ),
    "donation-drive": (
        "Supermarket collection weekends",
        "Twice a year volunteers stand at the exits of the three partner supermarkets with trolleys. "
        "Book the stores by phone in January; they want the volunteer names a week in advance.",
    ),
    "tax-receipts": (
        "Receipts for cash donors",
        "Donors giving money get a receipt from the finance volunteer within ten days; for gifts over "
        "250 the receipt must state the charity number so they can claim the tax relief.",
    ),
    "grant-report": (
        "Council grant reporting",
        "The council grant requires a quarterly report: parcels given, households served and volunteer "
        "hours. The figures come from the distribution spreadsheet; the report is due on the 15th.",
    ),
    "insurance": (
        "Insurance certificate",
        "Our public liability certificate is pinned in the office and a copy is in the shared drive. "
        "Venues hosting a pop-up pantry usually ask for it before they confirm.",
    ),
    "pest-control": (
        "Pest control visits",
        "The pest contractor visits on the last Thursday of each month and checks the bait stations "
        "along the back wall. Report any droppings or gnawed packets to the warehouse lead the same day.",
    ),
    "cleaning": (
        "Weekly deep clean",
        "Every Friday afternoon the sorting tables are scrubbed with the food-safe sanitiser and the "
        "warehouse floor is mopped. The rota is on the kitchen door.",
    ),
    "freezer": (
        "Freezer stock rotation",
        "Frozen meat from the butcher donations is labelled with the date it came in and given out "
        "oldest first. The chest freezers must stay below minus 18; check and note it at opening.",
    ),
    "bread": (
        "Day-old bread from bakeries",
        "The two bakeries leave yesterday's bread in crates at the side door before 6 am. It goes out "
        "the same day or is frozen; never keep it on the open shelf overnight.",
    ),
    "produce": (
        "Fresh vegetables from farms",
        "In summer and autumn the farms call when they have surplus. Send the small van with empty "
        "crates; leafy greens are handed out first because they wilt within two days.",
    ),
    "pop-up": (
        "Pop-up pantry at the community hall",
        "On the second Saturday the pantry runs at the community hall. Load the folding tables and the "
        "card reader the evening before, and bring the spare float of coins for the tea stall.",
    ),
    "keys": (
        "Building keys and alarm code",
        "Key holders sign the key register. Whoever locks up sets the alarm with their personal code; "
        "a shared code is never written down or texted.",
    ),
    "first-aid": (
        "First aid and accidents",
        "The first-aid kit is by the sink and the defibrillator is at the reception desk. Write every "
        "accident, even a small cut, in the accident book the same day.",
    ),
    "heat": (
        "Working in hot weather",
        "Above 28 degrees inside the warehouse, shifts get a break every hour and the dock doors stay "
        "open with the insect screens down. Water bottles are in the staff fridge.",
    ),
    "driver-checks": (
        "New drivers",
        "A volunteer driver needs a full licence held for two years and one accompanied route before "
        "driving alone. Photocopy the licence for the insurance file.",
    ),
    "stocktake": (
        "Annual stocktake",
        "Stock is counted on the last weekend of March when the warehouse is closed. Teams of two count "
        "aisle by aisle and the totals go into the inventory spreadsheet.",
    ),
    "shortage": (
        "When tins run short",
        "If the shelves of tinned protein fall below two weeks of parcels, the coordinator posts an "
        "appeal on social media and buys from the wholesaler with the emergency fund.",
    ),
    "phones": (
        "Client phone line",
        "The client line is answered Monday to Friday from 10 to 2. Outside those hours the voicemail "
        "gives the address of the nearest open pantry.",
    ),
    "translation": (
        "Clients who speak little English",
        "Use the telephone interpreting service; the account number is taped to the reception phone. "
        "The intake form is printed in Polish, Arabic, Romanian and Ukrainian too.",
    ),
    "christmas": (
        "Christmas hampers",
        "Hamper packing starts in the first week of December. Each hamper gets a voucher for a turkey "
        "or a vegetarian roast, which the family picks up from the butcher partner.",
    ),
    "waste": (
        "Food waste figures",
        "Weigh what goes to compost and to the feed partner and note it in the waste log. The board "
        "wants waste below three percent of what we receive.",
    ),
    "board": (
        "Board meetings",
        "The trustees meet on the first Wednesday of every other month. Papers go out a week before; "
        "anything needing a decision goes to the chair by the Friday before that.",
    ),
    "media": (
        "Talking to journalists",
        "Volunteers do not speak to the press on behalf of the food bank. Pass the journalist to the "
        "communications trustee, and never allow photos of clients.",
    ),
}

QUESTIONS: list[tuple[str, str]] = [
    ("where do we put yoghurt and milk that a supermarket gave us", "cold-chain"),
    ("who gets called when the fridge alarm goes off overnight", "cooler-alarm"),
    ("can I drive the forklift without a licence", "forklift"),
    ("a school class of twenty wants to help, how do they book", "volunteer-signup"),
    ("may a 14 year old help in the freezer room", "minors"),
    ("how do we operate the cardboard crusher safely", "baler"),
    ("which villages does the van visit on tuesdays", "truck-route"),
    ("how do I pay for diesel for the delivery van", "van-fuel"),
    ("can we hand out cereal after the best before date", "expiry"),
    ("what happens to products the manufacturer has withdrawn", "recall"),
    ("does a family need to prove they are poor to get food", "intake-form"),
    ("how long do we keep information about clients", "privacy"),
    ("a mother needs milk powder for her infant", "baby"),
    ("what does a donor need on the receipt to claim gift aid", "tax-receipts"),
    ("numbers we send to the city council every quarter", "grant-report"),
    ("I saw mouse droppings in aisle 3", "pest-control"),
    ("how cold must the chest freezers be", "freezer"),
    ("the hall wants proof we are insured before the pop-up", "insurance"),
    ("what to do if I cut my hand while packing", "first-aid"),
    ("a reporter called asking about our clients", "media"),
]


def records() -> list[dict]:
    """The notes as import records, the key carried in the title's end so a hit can be matched."""
    return [
        {"title": f"{title} [{key}]", "content": content, "tags": ["foodbank"]}
        for key, (title, content) in NOTES.items()
    ]


def key_of(title: str) -> str | None:
    """The note key a hit's title carries (see ``records``), or None for an item of another set."""
    if title.endswith("]") and "[" in title:
        return title[title.rindex("[") + 1 : -1]
    return None
