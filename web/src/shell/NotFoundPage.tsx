import { Link } from 'react-router';

export function NotFoundPage() {
  return (
    <>
      <h1>Page not found</h1>
      <p>
        The dashboard has no page here. <Link to="/traces">Go to the traces</Link>.
      </p>
    </>
  );
}
