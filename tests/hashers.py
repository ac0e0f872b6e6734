"""The password hasher of the test session."""

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class FewRoundsPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    """Django's PBKDF2 at a few rounds: every user a test makes and every sign-in hashes a password, and no
    test is about the hash's cost. The stored hash names the standard algorithm and its rounds, so a
    server process the test starts (with the default hashers) verifies it too."""

    iterations = 10
